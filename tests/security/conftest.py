"""The security tests share one committed world per module (tests/security/world.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.security.world import World, build_world, flush_database


@pytest.fixture(scope="module")
def world(django_db_setup: Any, django_db_blocker: Any) -> Iterator[World]:
    """Written once with autocommit, flushed when the module is done. Tests that use it are
    marked django_db (so pytest-django creates the test database) and make their requests
    in transactions that are rolled back."""
    with django_db_blocker.unblock():
        try:
            yield build_world()
        finally:
            flush_database()
