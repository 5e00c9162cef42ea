from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from console import views

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/", include("agents.api_urls")),
    path("api/", include("approvals.api_urls")),
    path("api/", include("audit.api_urls")),
    path("agents/", include("agents.urls")),
    path("approvals/", include("approvals.urls")),
    path("audit/", include("audit.urls")),
]
