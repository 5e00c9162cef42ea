"""The auditor's pages: read-only, except starting a chain verification. The records API
and export live in audit/api_urls.py."""

from __future__ import annotations

from django.urls import path, register_converter

from audit import views, views_explorer, views_verify
from console.converters import AnyTextConverter

register_converter(AnyTextConverter, "anytext")

app_name = "audit"
urlpatterns = [
    path("", views_explorer.records, name="records"),
    path("suggest/<str:field>/", views_explorer.suggest, name="suggest"),
    path("views/", views_explorer.saved_view_create, name="saved-view-create"),
    path("views/<int:pk>/delete/", views_explorer.saved_view_delete, name="saved-view-delete"),
    path("records/<int:pk>/", views.record_detail, name="record"),
    path("sessions/", views.sessions, name="sessions"),
    path("sessions/<anytext:session_id>/", views.session_timeline, name="session"),
    path("events/", views.events, name="events"),
    path("dashboard/", views.dashboard_page, name="dashboard"),
    path("verify/", views_verify.verify, name="verify"),
    path("verify/<uuid:pk>/", views_verify.verification_detail, name="verification"),
]
