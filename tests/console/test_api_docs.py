"""OpenAPI 3 at /api/schema/ for anyone logged in; Swagger UI at /api/docs/ from vendored
(sidecar) assets, never a CDN, and working under the console's Content-Security-Policy."""

from __future__ import annotations

import re

import pytest
import yaml
from django.test import Client

V2_PATHS = {
    "/api/v2/extendedAgent/agents",
    "/api/v2/extendedAgent/agents/{name}",
    "/api/v1/agent/hooks",
}


@pytest.mark.django_db
def test_schema_is_openapi_3_listing_the_hook_configuration_paths(outsider_client):
    response = outsider_client.get("/api/schema/")
    assert response.status_code == 200
    schema = yaml.safe_load(response.content)
    assert schema["openapi"].startswith("3.")
    assert V2_PATHS <= set(schema["paths"])
    detail = schema["paths"]["/api/v2/extendedAgent/agents/{name}"]
    assert {"get", "put", "delete"} <= set(detail)
    assert schema["components"]["securitySchemes"]["bearerToken"]["scheme"] == "bearer"


@pytest.mark.django_db
def test_schema_as_json_when_asked(outsider_client):
    response = outsider_client.get("/api/schema/?format=json")
    assert response.status_code == 200
    assert response.json()["openapi"].startswith("3.")


@pytest.mark.django_db
def test_schema_needs_a_login():
    response = Client().get("/api/schema/")
    assert response.status_code in (401, 403)
    assert "paths" not in response.content.decode()


@pytest.mark.django_db
def test_docs_page_uses_vendored_assets_and_no_cdn(outsider_client):
    response = outsider_client.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "cdn" not in html.lower()
    assert "jsdelivr" not in html.lower()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
    # The start-up script is a separate file, so the CSP needs no inline-script exception.
    script = re.search(r'<script src="([^"]*script[^"]*)"', html)
    assert script is not None
    start_up = outsider_client.get(script.group(1).replace("&amp;", "&"))
    assert start_up.status_code == 200
    assert "/api/schema/" in start_up.content.decode()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_docs_page_renders_the_api_in_chromium(live_server, charlie):
    from playwright.sync_api import sync_playwright

    from tests.browser.chromium import launch_chromium

    with sync_playwright() as p:
        browser = launch_chromium(p)
        try:
            page = browser.new_page()
            blocked: list[str] = []
            page.on(
                "console",
                lambda m: blocked.append(m.text) if "Content Security" in m.text else None,
            )
            outside: list[str] = []
            page.on(
                "request",
                lambda r: outside.append(r.url) if not r.url.startswith(live_server.url) else None,
            )
            page.goto(f"{live_server.url}/accounts/login/")
            page.fill("input[name=username]", "charlie")
            page.fill("input[name=password]", "pw-charlie")
            page.click("button[type=submit], input[type=submit]")
            page.goto(f"{live_server.url}/api/docs/")
            page.wait_for_selector(
                '[data-path="/api/v2/extendedAgent/agents/{name}"]', timeout=15_000
            )
            assert blocked == []
            assert outside == []
        finally:
            browser.close()
