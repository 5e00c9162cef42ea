"""The console's own 403, 404 and 500 pages, in its layout: never Django's debug page for a
403 (CSRF failures included), Django's debug pages for 404/500 only with DEBUG on, and a 500
page that renders without the database."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import path
from django.views import defaults

from console import urls as console_urls

pytestmark = pytest.mark.django_db


def boom(request: Any) -> Any:
    raise RuntimeError("a bug")


urlpatterns = [path("boom/", boom), *console_urls.urlpatterns]


@pytest.mark.parametrize("debug", [False, True])
def test_a_403_is_the_styled_page_with_or_without_debug(settings, outsider_client, debug):
    settings.DEBUG = debug
    response = outsider_client.get("/")
    assert response.status_code == 403
    html = response.content.decode()
    assert 'class="topbar"' in html and "You may not open this page" in html
    assert "Your account has no role yet; ask an admin to give you one." in html
    assert "Traceback" not in html and "technical" not in html.lower()


@pytest.mark.parametrize("debug", [False, True])
def test_a_refused_csrf_check_is_the_styled_403(settings, alice, debug):
    settings.DEBUG = debug
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    response = client.post("/agents/", {"slug": "x"})
    assert response.status_code == 403
    html = response.content.decode()
    assert 'class="topbar"' in html and "This form was out of date" in html
    assert "CSRF verification failed" not in html


def test_a_404_is_the_styled_page_without_debug(settings, admin_client):
    settings.DEBUG = False
    response = admin_client.get("/agents/no-such-agent/")
    assert response.status_code == 404
    html = response.content.decode()
    assert 'class="topbar"' in html and "There is nothing here" in html
    assert "/agents/no-such-agent/" in html
    assert "Django tried these URL patterns" not in html


def test_with_debug_a_404_is_djangos_debug_page(settings, admin_client):
    settings.DEBUG = True
    response = admin_client.get("/no-such-page/")
    assert response.status_code == 404
    assert "Django tried these URL patterns" in response.content.decode()


def test_a_500_is_the_styled_page_and_needs_no_database(settings, rf):
    settings.DEBUG = False
    with CaptureQueriesContext(connection) as queries:
        response = defaults.server_error(rf.get("/"))
    assert response.status_code == 500 and len(queries) == 0
    html = response.content.decode()
    assert 'class="topbar"' in html and "Something went wrong on our side" in html


@pytest.mark.urls("tests.console.test_error_pages")
def test_an_unhandled_error_without_debug_shows_the_styled_500(settings, admin_client):
    settings.DEBUG = False
    admin_client.raise_request_exception = False
    response = admin_client.get("/boom/")
    assert response.status_code == 500
    html = response.content.decode()
    assert "Something went wrong on our side" in html and "a bug" not in html
