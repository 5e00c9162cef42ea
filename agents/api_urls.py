from django.urls import path

from agents import api, api_declaration
from agents.runtime_hooks import views as runtime_views

urlpatterns = [
    path("v2/extendedAgent/agents", api.CustomAgentListApi.as_view(), name="api-custom-agents"),
    path(
        "v2/extendedAgent/agents/<str:name>",
        api.CustomAgentDetailApi.as_view(),
        name="api-custom-agent",
    ),
    path("v1/agent/hooks", api.AgentHooksApi.as_view(), name="api-agent-hooks"),
    path("v1/declaration", api_declaration.DeclarationApi.as_view(), name="api-declaration"),
    path("v1/hooks/<str:runtime>", runtime_views.runtime_hook, name="api-runtime-hook"),
    path("v1/connect/<str:runtime>", runtime_views.ConnectApi.as_view(), name="api-connect"),
]
