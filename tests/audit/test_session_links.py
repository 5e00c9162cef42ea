"""Links to a session timeline lead to that session's timeline whatever the session id holds
(ids are chosen by agents): no `../` escapes to another page, no `?`/`#` cut, no 500."""

from __future__ import annotations

import html
import re
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

import pytest
from django.test import Client
from django.urls import resolve, reverse
from django.utils import timezone

from audit.models import InterceptionRecord
from demo.records import store_items
from tests.audit.pages_support import ALPHA, session_items

pytestmark = pytest.mark.django_db

HOSTILE_IDS = [
    "../../agents/",
    "..",
    ".",
    "./",
    "a/../../../admin/",
    "sess?agent=other-agent#seq-1",
    "100% done %2F %2e%2e",
    "%2e%2e",
    "back\\slash\\..\\..",
    "sp ace+plus;semi",
    "ünï/cødé",
    "",
]
# What a browser (WHATWG URL) treats as a dot segment, percent-encoded forms included.
DOT_SEGMENTS = {".", "..", "%2e", ".%2e", "%2e.", "%2e%2e"}


@pytest.fixture
def sessions(sre: Any) -> dict[str, InterceptionRecord]:
    """One three-record session of sre-agent per hostile id; its input record by id."""
    start = timezone.now().replace(microsecond=0)
    for session_id in HOSTILE_IDS:
        store_items(sre.agent, session_items(session_id, ALPHA[:3], start=start))
    return {r.session_id: r for r in InterceptionRecord.objects.filter(interception_point="input")}


def _timeline_hrefs(body: str) -> list[str]:
    """Links into /audit/sessions/<id>/ (not the Sessions list itself)."""
    hrefs = [html.unescape(h) for h in re.findall(r'href="(/audit/sessions/[^"]*)"', body)]
    return [h for h in hrefs if urlsplit(h).path != "/audit/sessions/"]


def _follow(client: Client, page: str, href: str) -> tuple[Any, str]:
    """Resolve `href` as a browser does on `page` (dot segments removed) and open it."""
    segments = urlsplit(href).path.split("/")
    assert not DOT_SEGMENTS & {s.lower() for s in segments}, href
    target = urljoin(f"http://testserver{page}", href)
    parts = urlsplit(target)
    return client.get(f"{parts.path}?{parts.query}" if parts.query else parts.path), parts.path


def _assert_timeline_of(response: Any, path: str, session_id: str) -> None:
    assert response.status_code == 200, (path, response.status_code)
    match = resolve(unquote(path))
    assert (match.view_name, match.kwargs) == ("audit:session", {"session_id": session_id})
    body = response.content.decode()
    assert len(re.findall(r'data-sequence="', body)) == 3, path


def test_reverse_keeps_every_session_id_in_one_path_segment() -> None:
    for session_id in HOSTILE_IDS:
        url = reverse("audit:session", args=[session_id])
        assert url.startswith("/audit/sessions/") and url.endswith("/")
        middle = url.removeprefix("/audit/sessions/").removesuffix("/")
        assert "/" not in middle and "?" not in middle and "#" not in middle, url
        assert resolve(unquote(url)).kwargs == {"session_id": session_id}


@pytest.mark.parametrize("session_id", HOSTILE_IDS)
def test_record_detail_links_lead_to_that_sessions_timeline(
    auditor_client: Client, sessions: dict[str, InterceptionRecord], session_id: str
) -> None:
    record = sessions[session_id]
    page = f"/audit/records/{record.pk}/"
    body = auditor_client.get(page).content.decode()
    hrefs = _timeline_hrefs(body)
    assert len(hrefs) == 3  # breadcrumb, "Session timeline →", the Session fact
    for href in hrefs:
        response, path = _follow(auditor_client, page, href)
        _assert_timeline_of(response, path, session_id)


def test_record_search_and_recent_sessions_link_each_session_to_its_timeline(
    auditor_client: Client, sessions: dict[str, InterceptionRecord]
) -> None:
    for page in ("/audit/?interception_point=input", "/audit/sessions/"):
        response = auditor_client.get(page)
        assert response.status_code == 200
        hrefs = _timeline_hrefs(response.content.decode())
        assert len(hrefs) == len(HOSTILE_IDS), page
        reached = set()
        for href in hrefs:
            followed, path = _follow(auditor_client, page, href)
            session_id = resolve(unquote(path)).kwargs["session_id"]
            _assert_timeline_of(followed, path, session_id)
            reached.add(session_id)
        assert reached == set(HOSTILE_IDS), page


def test_a_shared_hostile_session_id_offers_each_agent_its_own_timeline(
    auditor_client: Client, sre: Any, other: Any
) -> None:
    session_id = "../../agents/?x=1#y"
    start = timezone.now().replace(microsecond=0)
    store_items(sre.agent, session_items(session_id, ALPHA[:3], start=start))
    store_items(other.agent, session_items(session_id, ALPHA[:3], start=start))
    page = reverse("audit:session", args=[session_id])
    body = auditor_client.get(page).content.decode()
    hrefs = [h for h in _timeline_hrefs(body) if "agent=" in h]
    assert len(hrefs) == 2
    for href in hrefs:
        response, path = _follow(auditor_client, page, href)
        _assert_timeline_of(response, path, session_id)
