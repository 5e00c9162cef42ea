"""Audit test fixtures: the known world of the page tests."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from tests.audit.pages_support import World, build_world


@pytest.fixture
def world(sre: Any, other: Any, rita: User) -> World:
    """tests/audit/pages_support.py's sessions, with sess-alpha's approval decided by rita."""
    return build_world(sre, other, reviewer=rita)
