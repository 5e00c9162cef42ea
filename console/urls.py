from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from agents import urls as agents_urls
from console import views
from runtimes import urls as runtimes_urls

# The /agents/ pages, in one `agents:` namespace: the agents app's own and the "Connect an
# agent" tab of the runtimes app, which sits above agents and so cannot be named by it.
agent_pages = ([*agents_urls.urlpatterns, *runtimes_urls.agent_urlpatterns], "agents")

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
    path("api/", include(runtimes_urls.api_urlpatterns)),
    path("api/", include("approvals.api_urls")),
    path("api/", include("audit.api_urls")),
    path("agents/", include(agent_pages)),
    path("approvals/", include("approvals.urls")),
    path("audit/", include("audit.urls")),
    path("users/", include("users.urls")),
]
