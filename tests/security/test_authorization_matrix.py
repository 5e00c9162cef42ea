"""Runs the authorization matrix (tests/security/matrix.py): every URL pattern of the project
× the methods it serves × 15 personas → the expected status, no state change for anyone the
row refuses, and no sre-agent data in a 2xx answer to another agent or reviewer scope.

A URL pattern added to the project without a matrix row fails
`test_every_url_pattern_has_a_matrix_row`; a method a route does not serve must answer 405.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.http import HttpResponseBase
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from tests.security.matrix import LOGIN, ROWS, SLACK_SECRET, Row
from tests.security.world import (
    PERSONAS,
    SESSION_PERSONAS,
    World,
    fingerprint,
)

# Marked so pytest-django creates the test database; the module's world is committed once
# (see `world`) and each test runs inside its own rolled-back transaction on top of it.
pytestmark = pytest.mark.django_db

FOREIGN = ("agent_other", "rev_other", "pat_rev_other")


@pytest.fixture(autouse=True)
def _slack_signing_secret(settings: Any) -> None:
    """The secret the matrix's signed Slack row is signed with."""
    settings.CONSOLE_SLACK_SIGNING_SECRET = SLACK_SECRET


SUCCESS = {200, 201, 202, 204, 302}
PROBED_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


@dataclass
class Outcome:
    status: int
    location: str
    body: bytes
    changed: bool


def _body(response: HttpResponseBase) -> bytes:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content)  # type: ignore[attr-defined]
    return bytes(response.content)


def perform(
    world: World, row: Row, persona: str, method: str | None = None, *, csrf: bool = False
) -> Outcome:
    """One request in a transaction that is rolled back afterwards; `csrf` makes the client
    enforce CSRF checks as a browser's request without the token would meet them."""
    method = method or row.method
    client = world.client(persona, enforce_csrf_checks=csrf)
    url = world.fmt(row.url)
    data = row.data(world) if callable(row.data) else row.data
    headers = {**world.headers(persona), **(row.headers(world) if row.headers else {})}
    with transaction.atomic():
        before = fingerprint()
        if method == "GET":
            response = client.get(url, **headers)
        elif row.content_type is None and method == "POST":
            response = client.post(url, data=data or {}, **headers)
        elif row.content_type is None:
            response = client.generic(method, url, **headers)
        else:
            response = client.generic(
                method, url, data=data or "", content_type=row.content_type, **headers
            )
        body = _body(response)
        changed = fingerprint() != before
        transaction.set_rollback(True)
    return Outcome(response.status_code, response.get("Location", ""), body, changed)


def _matches(expected: int | str, outcome: Outcome) -> bool:
    if expected == LOGIN:
        return outcome.status == 302 and outcome.location.startswith("/accounts/login/")
    if expected == 302:
        return outcome.status == 302 and not outcome.location.startswith("/accounts/login/")
    return outcome.status == expected


def _should_write(row: Row, persona: str) -> bool:
    expected = row.expect[persona]
    return row.writes and expected in SUCCESS and persona not in row.no_write


def check_row(world: World, row: Row) -> list[str]:
    problems = []
    for persona in PERSONAS:
        expected = row.expect[persona]
        outcome = perform(world, row, persona)
        got = f"{outcome.status} {outcome.location}".strip()
        if not _matches(expected, outcome):
            detail = outcome.body[:160].decode("utf-8", "replace")
            problems.append(f"{persona}: expected {expected}, got {got} {detail}")
        elif outcome.changed != _should_write(row, persona):
            what = "changed" if outcome.changed else "did not change"
            problems.append(f"{persona}: {got} {what} the stored state")
        if persona in FOREIGN and 200 <= outcome.status < 300:
            text = outcome.body.decode("utf-8", "replace")
            leaked = [marker for marker in world.markers() if marker in text]
            if leaked:
                problems.append(f"{persona}: {got} shows sre-agent data {leaked}")
    return problems


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_matrix_row(world: World, row: Row) -> None:
    assert set(row.expect) == set(PERSONAS), "every row names every persona"
    problems = check_row(world, row)
    assert not problems, f"{row.id} ({row.url}):\n  " + "\n  ".join(problems)


def url_patterns(resolver: URLResolver | None = None, prefix: str = "") -> Iterator[str]:
    for item in (resolver or get_resolver()).url_patterns:
        route = prefix + str(item.pattern)
        if isinstance(item, URLResolver):
            if route == "admin/":  # Django admin: its own staff check (tested below)
                continue
            yield from url_patterns(item, route)
        elif isinstance(item, URLPattern):
            yield route


def test_every_url_pattern_has_a_matrix_row() -> None:
    routes = set(url_patterns())
    covered = {row.route for row in ROWS}
    assert routes - covered == set(), "URL patterns without a matrix row"
    assert covered - routes == set(), "matrix rows for URL patterns that no longer exist"


def _served(route: str) -> set[str]:
    rows = [row for row in ROWS if row.route == route]
    return {row.method for row in rows}.union(*(row.also for row in rows))


def _insider(rows: list[Row]) -> tuple[Row, str]:
    """A row and a persona that may use the route (the most privileged first), so that a
    405 is about the method alone."""
    for persona in ("admin", *PERSONAS):
        for row in rows:
            if row.expect[persona] in SUCCESS or (
                row.expect[persona] == LOGIN and persona != "anon"
            ):
                return row, persona
    raise AssertionError(f"no persona may use {rows[0].route}")


@pytest.mark.parametrize("route", sorted({row.route for row in ROWS}))
def test_unserved_methods_are_405(world: World, route: str) -> None:
    row, persona = _insider([row for row in ROWS if row.route == route])
    wrong = {}
    for method in PROBED_METHODS:
        if method in _served(route):
            continue
        outcome = perform(world, row, persona, method=method)
        if outcome.status != 405 or outcome.changed:
            wrong[method] = outcome.status
    assert wrong == {}, f"/{route} as {persona}: methods it does not serve answered {wrong}"


UNSAFE_SESSION_ROWS = [
    (row, persona)
    for row in ROWS
    if row.method != "GET" and not row.csrf_exempt
    for persona in ("anon", *SESSION_PERSONAS)
    if row.expect[persona] in SUCCESS
]


def _first_session_insiders() -> list[tuple[Row, str]]:
    seen: set[str] = set()
    out = []
    for row, persona in UNSAFE_SESSION_ROWS:
        if row.id not in seen:
            seen.add(row.id)
            out.append((row, persona))
    return out


@pytest.mark.parametrize(
    ("row", "persona"), _first_session_insiders(), ids=lambda v: v.id if isinstance(v, Row) else v
)
def test_unsafe_session_requests_need_the_csrf_token(world: World, row: Row, persona: str) -> None:
    outcome = perform(world, row, persona, csrf=True)
    assert outcome.status == 403, outcome.body[:200]
    assert not outcome.changed


def test_matrix_size_is_reported() -> None:
    """The figure docs/security.md quotes: rows (route × method) × personas."""
    assert len(ROWS) >= 70 and len(PERSONAS) == 15


def test_django_admin_sends_anonymous_visitors_to_its_own_login(world: World) -> None:
    response = Client().get("/admin/")
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


def test_django_admin_is_for_superusers_only(world: World) -> None:
    for persona in ("auditor", "admin"):
        response = world.client(persona).get("/admin/")
        assert response.status_code == 302, persona
        assert response["Location"].startswith("/admin/login/")
    with transaction.atomic():
        root = User.objects.create_superuser("root", password="pw-root")
        client = Client()
        client.force_login(root)
        index = client.get("/admin/")
        transaction.set_rollback(True)
    assert index.status_code == 200
    # People are changed in the portal only (governance events, sessions and sockets ended).
    assert "/admin/auth/user/" not in index.content.decode()
