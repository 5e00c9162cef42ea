"""Only admins reach the user pages: other people get the console's styled 403 and nothing
changes; anonymous visitors go to the login page."""

from __future__ import annotations

import pytest
from django.test import Client

from console.governance.models import GovernanceEvent

pytestmark = pytest.mark.django_db

PAGES = [
    ("get", "/users/"),
    ("get", "/users/new/"),
    ("post", "/users/new/"),
    ("get", "/users/{pk}/"),
    ("post", "/users/{pk}/"),
    ("post", "/users/{pk}/invitation/"),
    ("get", "/users/{pk}/deactivate/"),
    ("post", "/users/{pk}/deactivate/"),
    ("post", "/users/{pk}/reactivate/"),
    ("post", "/users/{pk}/slack/"),
    ("post", "/users/{pk}/tokens/"),
    ("post", "/users/{pk}/tokens/1/revoke/"),
]


@pytest.mark.parametrize(("method", "url"), PAGES)
@pytest.mark.parametrize("who", ["reviewer_client", "auditor_client", "outsider_client"])
def test_people_who_are_not_admins_get_the_styled_403(request, rita, method, url, who):
    client = request.getfixturevalue(who)
    before = GovernanceEvent.objects.count()
    data = {"username": "x", "roles": ["admin"], "name": "t", "slack_user_id": "U0RITA01"}
    data = data if method == "post" else None
    response = getattr(client, method)(url.format(pk=rita.pk), data)
    assert response.status_code == 403
    html = response.content.decode()
    assert 'class="topbar"' in html and "You may not open this page" in html
    assert "The portal is for admins." in html
    assert GovernanceEvent.objects.count() == before
    rita.refresh_from_db()
    assert rita.is_active


@pytest.mark.parametrize(("method", "url"), PAGES)
def test_anonymous_visitors_go_to_the_login_page(rita, method, url):
    response = getattr(Client(), method)(url.format(pk=rita.pk))
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_admins_see_the_users_link_and_others_do_not(admin_client, reviewer_client):
    assert 'href="/users/"' in admin_client.get("/agents/").content.decode()
    assert 'href="/users/"' not in reviewer_client.get("/approvals/").content.decode()


def test_nothing_in_the_portal_links_to_django_admin(admin_client, rita):
    for url in ("/agents/", "/users/", f"/users/{rita.pk}/", "/audit/", "/approvals/"):
        assert 'href="/admin/' not in admin_client.get(url).content.decode(), url
