from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from console import views

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves its start-up script as a file: the CSP allows no inline scripts.
    path(
        "api/docs/",
        SpectacularSwaggerSplitView.as_view(url_name="api-schema", template_name="api/docs.html"),
        name="api-docs",
    ),
    path("api/", include("agents.api_urls")),
    path("api/", include("approvals.api_urls")),
    path("api/", include("audit.api_urls")),
    path("agents/", include("agents.urls")),
    path("approvals/", include("approvals.urls")),
    path("audit/", include("audit.urls")),
    path("users/", include("users.urls")),
]
