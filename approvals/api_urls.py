"""Escalations API, mounted under /api/."""

from __future__ import annotations

from django.urls import path

from approvals import api, longpoll, slack_views

urlpatterns = [
    path("v1/escalations", api.EscalationCollectionApi.as_view(), name="approvals-escalations"),
    path("v1/escalations/<str:pk>", longpoll.escalation_status, name="approvals-escalation"),
    path(
        "v1/escalations/<str:pk>/decision",
        api.EscalationDecisionApi.as_view(),
        name="approvals-escalation-decision",
    ),
    path(
        "v1/integrations/slack/interactions",
        slack_views.slack_interactions,
        name="approvals-slack-interactions",
    ),
]
