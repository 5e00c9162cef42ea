"""Users are managed on the portal's /users/ pages, where every change is a governance event
and a deactivation ends sessions and sockets; Django admin's own user and group editors
would bypass all of that, so they are not offered."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth.models import Group, User

admin.site.unregister(User)
admin.site.unregister(Group)
