from django.urls import path

from agents import api

urlpatterns = [
    path("v2/extendedAgent/agents", api.CustomAgentListApi.as_view(), name="api-custom-agents"),
    path(
        "v2/extendedAgent/agents/<str:name>",
        api.CustomAgentDetailApi.as_view(),
        name="api-custom-agent",
    ),
    path("v1/agent/hooks", api.AgentHooksApi.as_view(), name="api-agent-hooks"),
]
