"""One domain error, answered once (console.errors).

- every DomainError subclass has its status and code, and is answered in the API's shape by
  the DRF exception handler, by the middleware for the plain views under /api/, and as the
  styled error page in the portal (htmx: swapped into the page with 200);
- the apps define no exception class of their own besides the domain errors, except the
  few listed below with the reason;
- one JSON-pointer encoder: no other module escapes `~` and `/` itself.
"""

from __future__ import annotations

import ast
import builtins
import json
from pathlib import Path
from typing import Any

import pytest
from django.http import HttpRequest, HttpResponse
from django.test import Client
from django.urls import include, path
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.test import APIRequestFactory
from rest_framework.views import APIView

from console import errors
from console.errors import DomainError, pointer

ROOT = Path(__file__).resolve().parents[2]
FIELDS = {"/spec/hooks/Stop/0/timeout": ["Must be 1-300."]}

# Every subclass, its status and code: a new one must be added here (and so decided).
EXPECTED: dict[type[DomainError], tuple[int, str]] = {
    errors.InvalidInput: (400, "invalid"),
    errors.NotAuthenticated: (401, "not_authenticated"),
    errors.Forbidden: (403, "forbidden"),
    errors.NotFound: (404, "not_found"),
    errors.MethodNotAllowed: (405, "method_not_allowed"),
    errors.Conflict: (409, "conflict"),
    errors.TooLarge: (413, "too_large"),
    errors.UnsupportedMediaType: (415, "unsupported_media_type"),
    errors.Unavailable: (503, "unavailable"),
}
BY_NAME = {cls.__name__: cls for cls in EXPECTED}


def _subclasses(cls: type) -> set[type]:
    found = set(cls.__subclasses__())
    for sub in list(found):
        found |= _subclasses(sub)
    return found


def _raise(name: str) -> None:
    raise BY_NAME[name]("The hook is invalid.", fields=dict(FIELDS))


class _Raising(APIView):
    authentication_classes: list[Any] = []
    permission_classes: list[Any] = []
    throttle_classes: list[Any] = []

    def get(self, request: Request, name: str) -> Response:
        _raise(name)
        raise AssertionError("unreachable")


def _plain_view(request: HttpRequest, name: str) -> HttpResponse:
    _raise(name)
    raise AssertionError("unreachable")


# The portal and the plain /api/ views, through the real middleware stack (pytest.mark.urls).
urlpatterns = [
    path("api/raise/<str:name>", _plain_view),
    path("raise/<str:name>/", _plain_view),
    path("", include("console.urls")),
]


def _body(code: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": "The hook is invalid.", "fields": FIELDS}}


def test_every_subclass_has_its_status_and_code() -> None:
    # Subclasses elsewhere refine one of these (listed in OWN_EXCEPTIONS_ALLOWED below).
    in_console = {cls for cls in _subclasses(DomainError) if cls.__module__ == "console.errors"}
    assert in_console == set(EXPECTED)
    for cls, (status, code) in EXPECTED.items():
        error = cls("x")
        assert (error.status, error.code, error.fields, str(error)) == (status, code, {}, "x")


@pytest.mark.parametrize("cls", list(EXPECTED), ids=lambda cls: cls.__name__)
def test_the_api_answers_each_error_with_its_status_and_body(cls: type[DomainError]) -> None:
    status, code = EXPECTED[cls]
    request = APIRequestFactory().get(f"/api/raise/{cls.__name__}")
    response = _Raising.as_view()(request, name=cls.__name__)
    response.render()
    assert response.status_code == status
    assert json.loads(response.content) == _body(code)


def test_an_api_error_carries_its_headers_and_may_narrow_its_code() -> None:
    class _Down(_Raising):
        def get(self, request: Request, name: str) -> Response:
            raise errors.Unavailable("Down.", headers={"Retry-After": "5"})

    response = _Down.as_view()(APIRequestFactory().get("/x"), name="")
    assert (response.status_code, response["Retry-After"]) == (503, "5")
    assert errors.NotAuthenticated("No.").headers == {"WWW-Authenticate": "Bearer"}
    malformed = errors.InvalidInput("Bad JSON.", code="malformed")
    assert malformed.body() == {
        "error": {"code": "malformed", "message": "Bad JSON.", "fields": {}}
    }


@pytest.mark.urls(__name__)
@pytest.mark.django_db
@pytest.mark.parametrize("cls", list(EXPECTED), ids=lambda cls: cls.__name__)
def test_a_plain_api_view_answers_each_error_in_the_api_shape(
    client: Client, cls: type[DomainError]
) -> None:
    status, code = EXPECTED[cls]
    response = client.get(f"/api/raise/{cls.__name__}")
    assert response.status_code == status
    assert response["Content-Type"] == "application/json"
    assert response.json() == _body(code)
    if cls is errors.NotAuthenticated:
        assert response["WWW-Authenticate"] == "Bearer"


@pytest.mark.urls(__name__)
@pytest.mark.django_db
@pytest.mark.parametrize("cls", list(EXPECTED), ids=lambda cls: cls.__name__)
def test_a_portal_view_answers_each_error_with_the_styled_page(
    client: Client, cls: type[DomainError]
) -> None:
    status, code = EXPECTED[cls]
    response = client.get(f"/raise/{cls.__name__}/")
    html = response.content.decode()
    assert response.status_code == status
    assert "<!doctype html>" in html and f"{status} · {code}" in html
    assert "The hook is invalid." in html
    assert "<code>/spec/hooks/Stop/0/timeout</code>: Must be 1-300." in html


@pytest.mark.urls(__name__)
@pytest.mark.django_db
def test_an_htmx_request_gets_the_error_swapped_into_the_page(client: Client) -> None:
    response = client.get("/raise/Conflict/", HTTP_HX_REQUEST="true")
    html = response.content.decode()
    # htmx swaps no 4xx by default: 200, retargeted at the page's <main>.
    assert response.status_code == 200
    assert (response["HX-Retarget"], response["HX-Reswap"]) == ("main.page", "innerHTML")
    assert "<!doctype html>" not in html and "409 · conflict" in html


def test_pointer_escapes_tilde_then_slash() -> None:
    assert pointer() == ""
    assert pointer("spec", "hooks", "PreToolUse", 0) == "/spec/hooks/PreToolUse/0"
    assert pointer("a/b", "m~n", "~1") == "/a~1b/m~0n/~01"


# ---- rules over the source --------------------------------------------------------------

# Every Django app at the top of the repository (a new app is scanned without a change here).
SERVER_PACKAGES = sorted(path.parent.name for path in ROOT.glob("*/apps.py"))
# Exceptions that are not answers to a request, so not domain errors.
OWN_EXCEPTIONS_ALLOWED = {
    # closes a reviewer's websocket with an application close code; nobody is answered
    "approvals/socket_access.py:AccessEnded",
    # makes Celery retry a webhook the receiver answered with 5xx/429
    "approvals/tasks.py:WebhookFailed",
    # an outbound destination refused (private address): logged, never answered
    "console/outbound.py:OutboundRefused",
    # a Conflict that carries the two revision numbers the review page shows
    "agents/config_review.py:BaseRevisionMoved",
}


def _server_files() -> list[Path]:
    return [
        file
        for package in SERVER_PACKAGES
        for file in sorted((ROOT / package).rglob("*.py"))
        if "migrations" not in file.parts
    ]


def _base_name(base: ast.expr) -> str:
    return base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")


def _names_an_exception(name: str, known: set[str]) -> bool:
    builtin = getattr(builtins, name, None)
    is_builtin = isinstance(builtin, type) and issubclass(builtin, BaseException)
    return is_builtin or name.endswith(("Error", "Exception")) or name in known


def test_the_apps_define_no_exception_besides_the_domain_errors() -> None:
    classes = [
        (file.relative_to(ROOT).as_posix(), node)
        for file in _server_files()
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef)
    ]
    known: set[str] = set()  # exception classes found so far, for classes deriving from them
    while True:
        more = {
            node.name
            for _name, node in classes
            if any(_names_an_exception(_base_name(base), known) for base in node.bases)
        }
        if more <= known:
            break
        known |= more
    found = {
        f"{name}:{node.name}"
        for name, node in classes
        if node.name in known and name != "console/errors.py"
    }
    assert found == OWN_EXCEPTIONS_ALLOWED


def test_the_server_packages_are_all_scanned() -> None:
    assert {"agents", "approvals", "audit", "console"} <= set(SERVER_PACKAGES)


def test_one_json_pointer_encoder() -> None:
    escaping = [
        f"{file.relative_to(ROOT).as_posix()}:{number}"
        for file in [*_server_files(), *sorted((ROOT / "console_client").rglob("*.py"))]
        if file.relative_to(ROOT).as_posix() != "console/errors.py"
        for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1)
        if '"~0"' in line or '"~1"' in line or "'~0'" in line or "'~1'" in line
    ]
    assert escaping == []
