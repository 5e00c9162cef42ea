"""The auditor's pages (read-only). The records API and export live in audit/api_urls.py."""

from __future__ import annotations

from django.urls import path

from audit import views

app_name = "audit"
urlpatterns = [
    path("", views.records, name="records"),
    path("records/<int:pk>/", views.record_detail, name="record"),
    path("sessions/", views.sessions, name="sessions"),
    path("sessions/<path:session_id>/", views.session_timeline, name="session"),
    path("events/", views.events, name="events"),
    path("dashboard/", views.dashboard_page, name="dashboard"),
]
