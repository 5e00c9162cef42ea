"""Portal pages under /agents/ (admins only), in the `agents:` namespace that console/urls.py
gives them (with the runtimes app's "Connect an agent" tab)."""

from __future__ import annotations

from django.urls import path

from agents import views, views_hookpage, views_hooktest, views_review

urlpatterns = [
    path("", views.agent_list, name="list"),
    path("<str:slug>/", views.agent_detail, name="detail"),
    path("<str:slug>/mode/", views.agent_mode, name="mode"),
    path("<str:slug>/settings/", views.agent_settings, name="settings"),
    path("<str:slug>/hooks/new/", views.hook_create, name="hook_create"),
    path("<str:slug>/hooks/<str:key>/", views.hook_edit, name="hook_edit"),
    path(
        "<str:slug>/hooks/<str:key>/overview/", views_hookpage.hook_overview, name="hook_overview"
    ),
    path("<str:slug>/hooks/<str:key>/enabled/", views.hook_enabled, name="hook_enabled"),
    path("<str:slug>/hooks/<str:key>/move/", views.hook_move, name="hook_move"),
    path("<str:slug>/hooks/<str:key>/delete/", views.hook_delete, name="hook_delete"),
    path(
        "<str:slug>/hooks/<str:key>/samples/",
        views_hooktest.hook_sample_save,
        name="hook_sample_save",
    ),
    path(
        "<str:slug>/hooks/<str:key>/samples/<int:pk>/delete/",
        views_hooktest.hook_sample_delete,
        name="hook_sample_delete",
    ),
    path("<str:slug>/custom/", views.custom_agent_list, name="custom_agents"),
    path("<str:slug>/import/", views_review.custom_agent_import, name="custom_import"),
    path("<str:slug>/custom/<str:name>/", views.custom_agent_detail, name="custom_agent"),
    path("<str:slug>/custom/<str:name>/hooks/new/", views.hook_create, name="custom_hook_create"),
    path(
        "<str:slug>/custom/<str:name>/settings/",
        views.custom_agent_settings,
        name="custom_settings",
    ),
    path("<str:slug>/custom/<str:name>/delete/", views.custom_agent_delete, name="custom_delete"),
    path("<str:slug>/custom/<str:name>/yaml/", views_review.custom_agent_yaml, name="custom_yaml"),
    path("<str:slug>/custom/<str:name>/export/", views.custom_agent_export, name="custom_export"),
    path("<str:slug>/custom/<str:name>/history/", views.history, name="custom_history"),
    path("<str:slug>/tokens/", views.agent_tokens, name="tokens"),
    path("<str:slug>/tokens/<int:pk>/revoke/", views.agent_token_revoke, name="token_revoke"),
    path("<str:slug>/history/", views.history, name="history"),
    path("<str:slug>/history/<int:number>/", views.revision_detail, name="revision"),
    path(
        "<str:slug>/history/<int:number>/rollback/",
        views_review.revision_rollback,
        name="revision_rollback",
    ),
    # "Test this hook" (agents/views_hooktest.py): GET is the panel for the #hook-test-panel
    # slot, POST starts the test, the status URL answers until its result is there. No
    # trailing slash, so they never collide with hooks/<key>/.
    path("<str:slug>/hooks/test", views_hooktest.hook_test, name="hook_test"),
    path(
        "<str:slug>/hooks/test/<str:token>",
        views_hooktest.hook_test_status,
        name="hook_test_status",
    ),
]
