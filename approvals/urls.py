"""Reviewer pages: the live inbox, decisions from it, the history tab, one escalation's page."""

from __future__ import annotations

from django.urls import path

from approvals import views

app_name = "approvals"
urlpatterns = [
    path("", views.inbox, name="inbox"),
    path("history/", views.history, name="history"),
    path("bulk/", views.bulk_decide, name="bulk"),
    path("<uuid:pk>/", views.detail, name="detail"),
    path("<uuid:pk>/decision/", views.decide, name="decide"),
    path("link/<str:token>/", views.decision_link, name="link"),
]
