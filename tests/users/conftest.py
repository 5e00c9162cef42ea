"""User-page fixtures: fast password hashing, and a second admin (anna) for the guards."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from console import services as console_services


@pytest.fixture(autouse=True)
def _fast_password_hashing(fast_password_hashing: None) -> None:
    """The user pages' tests create personas in every test (tests/conftest.py)."""


@pytest.fixture
def anna(db: Any) -> User:
    return console_services.user_set_role(
        actor=None, username="anna", role="admin", password="pw-anna"
    )
