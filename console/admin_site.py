"""Django admin is the superusers' back office, not part of the portal: console admins work
in the portal (users on /users/), which links nowhere into /admin/. Only an active superuser
passes its gate; anyone else gets its login form."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig
from django.http import HttpRequest


class SuperuserAdminSite(admin.AdminSite):
    site_header = "Governance console: superuser back office"
    index_title = "Back office (users and roles are managed in the portal under /users/)"

    def has_permission(self, request: HttpRequest) -> bool:
        user = request.user
        return bool(user.is_active and user.is_superuser)


class ConsoleAdminConfig(AdminConfig):
    default_site = "console.admin_site.SuperuserAdminSite"
