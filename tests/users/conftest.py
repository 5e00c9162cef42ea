"""User-page fixtures: a second admin (anna) for the guards."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from console import services as console_services


@pytest.fixture
def anna(db: Any) -> User:
    return console_services.user_set_role(
        actor=None, username="anna", role="admin", password="pw-anna"
    )
