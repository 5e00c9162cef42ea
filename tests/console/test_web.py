"""The portal kit: the role gate and the page renderer (console/web.py)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.test import RequestFactory
from django_htmx.middleware import HtmxDetails

from console import web
from console.roles import Role


def _request(user: Any, **headers: str) -> HttpRequest:
    request = RequestFactory().get("/page/?q=1", headers=headers)
    request.user = user
    request.htmx = HtmxDetails(request)  # type: ignore[attr-defined]
    return request


@web.role_required(Role.REVIEWER, Role.AUDITOR)
def _reviewers_and_auditors(request: HttpRequest) -> HttpResponse:
    return HttpResponse("in")


@web.role_required(Role.ADMIN)
def _admins(request: HttpRequest) -> HttpResponse:
    return HttpResponse("in")


def test_anonymous_visitors_are_sent_to_the_login_page(db: Any) -> None:
    response = _admins(_request(AnonymousUser()))
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=/page/")


def test_any_listed_role_passes_and_admins_hold_every_role(
    alice: Any, rita: Any, audrey: Any
) -> None:
    for user in (alice, rita, audrey):
        assert _reviewers_and_auditors(_request(user)).content == b"in"
    assert _admins(_request(alice)).content == b"in"


@pytest.mark.parametrize("persona", ["rita", "audrey", "charlie"])
def test_people_without_the_role_get_403(persona: str, request: pytest.FixtureRequest) -> None:
    with pytest.raises(PermissionDenied, match="for admins"):
        _admins(_request(request.getfixturevalue(persona)))


def test_people_without_any_role_get_403_naming_who_may(charlie: Any) -> None:
    with pytest.raises(PermissionDenied, match="admins or auditors or reviewers"):
        _reviewers_and_auditors(_request(charlie))


def test_a_gate_without_roles_is_refused() -> None:
    with pytest.raises(ValueError):
        web.role_required()


@pytest.fixture
def rendered(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    calls: list[tuple[str, int]] = []

    def fake_render(
        request: HttpRequest, name: str, context: dict[str, Any], status: int = 200
    ) -> HttpResponse:
        calls.append((name, status))
        return HttpResponse(name, status=status)

    monkeypatch.setattr(web, "render", fake_render)
    return calls


def _page(request: HttpRequest, **kwargs: Any) -> HttpResponse:
    return web.render_page(request, "app/page.html", {}, partial="results", **kwargs)


def test_a_plain_request_gets_the_whole_page_with_its_status(rendered: Any) -> None:
    response = _page(_request(AnonymousUser()), status=400, push_url="/clean")
    assert rendered == [("app/page.html", 400)]
    assert "HX-Push-Url" not in response
    assert response["Vary"] == "HX-Request"


def test_an_htmx_request_gets_the_partial_with_200_and_the_clean_url(rendered: Any) -> None:
    response = _page(_request(AnonymousUser(), HX_Request="true"), status=400, push_url="/clean")
    assert rendered == [("app/page.html#results", 200)]
    assert response["HX-Push-Url"] == "/clean"
    assert response["Vary"] == "HX-Request"


@pytest.mark.parametrize("header", ["HX-Boosted", "HX-History-Restore-Request"])
def test_boosted_and_history_restore_requests_get_the_whole_page(
    rendered: Any, header: str
) -> None:
    headers = {"HX-Request": "true", header: "true"}
    response = _page(_request(AnonymousUser(), **headers), status=400, push_url="/clean")
    assert rendered == [("app/page.html", 400)]
    assert "HX-Push-Url" not in response


def test_a_page_without_a_partial_is_always_whole(rendered: Any) -> None:
    web.render_page(_request(AnonymousUser(), HX_Request="true"), "app/page.html", {})
    assert rendered == [("app/page.html", 200)]
