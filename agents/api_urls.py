from django.urls import path

from agents import api, api_declaration

urlpatterns = [
    path("v2/extendedAgent/agents", api.CustomAgentListApi.as_view(), name="api-custom-agents"),
    path(
        "v2/extendedAgent/agents/<str:name>",
        api.CustomAgentDetailApi.as_view(),
        name="api-custom-agent",
    ),
    path("v1/agent/hooks", api.AgentHooksApi.as_view(), name="api-agent-hooks"),
    path("v1/declaration", api_declaration.DeclarationApi.as_view(), name="api-declaration"),
]
