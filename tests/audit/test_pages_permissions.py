"""Who may open the audit pages: auditors and admins read; everyone else is kept out."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from tests.audit.pages_support import World

PAGES = [
    "/audit/",
    "/audit/?outcome=denied",
    "/audit/sessions/",
    "/audit/sessions/sess-alpha/?agent=sre-agent",
    "/audit/events/",
    "/audit/dashboard/",
]


def _pages(world: World) -> list[str]:
    return [*PAGES, f"/audit/records/{world.record('sess-alpha', 3).pk}/"]


@pytest.mark.parametrize("persona", ["auditor_client", "admin_client"])
def test_auditors_and_admins_open_every_page(
    persona: str, world: World, request: pytest.FixtureRequest
) -> None:
    client: Client = request.getfixturevalue(persona)
    for url in _pages(world):
        response = client.get(url)
        assert response.status_code == 200, url
        assert b'aria-label="Audit sections"' in response.content, url


@pytest.mark.parametrize("persona", ["reviewer_client", "outsider_client"])
def test_reviewers_and_people_without_a_role_get_403(
    persona: str, world: World, request: pytest.FixtureRequest
) -> None:
    client: Client = request.getfixturevalue(persona)
    for url in _pages(world):
        assert client.get(url).status_code == 403, url


def test_anonymous_visitors_are_sent_to_the_login_page(client: Client, world: World) -> None:
    for url in _pages(world):
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/accounts/login/?next="), url


def test_no_audit_page_accepts_a_post(auditor_client: Client, world: World) -> None:
    for url in _pages(world):
        assert auditor_client.post(url, {"outcome": "denied"}).status_code == 405, url


def test_pages_carry_no_edit_controls(auditor_client: Client, world: World) -> None:
    # The forms that post start a chain verification, or save/delete the auditor's own
    # saved views of the explorer: none changes a record.
    for url in _pages(world):
        body = auditor_client.get(url).content.decode().split("<main", 1)[1]
        forms = [
            form
            for form in re.findall(r'<form method="post"[^>]*>', body)
            if 'action="/audit/views/' not in form
        ]
        assert forms == ['<form method="post" action="/audit/verify/" class="verify-form">'], url
