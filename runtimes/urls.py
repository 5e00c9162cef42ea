"""The runtimes app's URLs, wired by console/urls.py: the runtime endpoints under /api/ and the
"Connect an agent" tab under /agents/, which keeps its name in the `agents:` namespace."""

from __future__ import annotations

from django.urls import path

from runtimes import portal, views

api_urlpatterns = [
    path("v1/hooks/<str:runtime>", views.runtime_hook, name="api-runtime-hook"),
    path("v1/connect/<str:runtime>", views.ConnectApi.as_view(), name="api-connect"),
]

# Joined to the agents app's pages by console/urls.py, in the `agents:` namespace.
agent_urlpatterns = [
    path("<str:slug>/connect/", portal.agent_connect, name="connect"),
]
