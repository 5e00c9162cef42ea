"""User pages under /users/ (admins only)."""

from __future__ import annotations

from django.urls import path

from users import views

app_name = "users"

urlpatterns = [
    path("", views.user_list, name="list"),
    path("new/", views.user_create, name="create"),
    path("<int:pk>/", views.user_detail, name="detail"),
    path("<int:pk>/invitation/", views.user_invitation, name="invitation"),
    path("<int:pk>/deactivate/", views.user_deactivate, name="deactivate"),
    path("<int:pk>/reactivate/", views.user_reactivate, name="reactivate"),
    path("<int:pk>/slack/", views.user_slack, name="slack"),
    path("<int:pk>/tokens/", views.token_issue, name="token_issue"),
    path("<int:pk>/tokens/<int:token_pk>/revoke/", views.token_revoke, name="token_revoke"),
]
