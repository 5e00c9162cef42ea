"""/users/: the list, adding a user (with a password or an invitation link), and setting roles
and reviewer scope, with every refusal naming its field and writing nothing."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from approvals.models import ReviewerScope, SlackIdentity
from console.governance.models import GovernanceEvent
from users.services import UserProblems, user_roles, user_update

pytestmark = pytest.mark.django_db


def events(action: str) -> list[GovernanceEvent]:
    return list(GovernanceEvent.objects.filter(action=action).order_by("id"))


def test_the_list_shows_roles_scope_and_status(admin_client, rita, audrey, alice, sre, other):
    ReviewerScope.objects.create(user=rita, agent=sre.agent)
    audrey.is_active = False
    audrey.save(update_fields=["is_active"])
    html = admin_client.get("/users/").content.decode()
    rita_row = re.search(rf'<tr id="user-{rita.pk}".*?</tr>', html, re.S).group(0)
    assert "reviewer" in rita_row and "sre-agent" in rita_row and "active" in rita_row
    audrey_row = re.search(rf'<tr id="user-{audrey.pk}".*?</tr>', html, re.S).group(0)
    assert "deactivated" in audrey_row
    assert '<a href="/users/" aria-current="page">Users</a>' in html


def test_the_list_costs_the_same_queries_for_more_users(
    admin_client, django_assert_max_num_queries
):
    for n in range(3):
        User.objects.create_user(f"u{n}")
    with django_assert_max_num_queries(12) as few:
        admin_client.get("/users/")
    for n in range(3, 30):
        User.objects.create_user(f"u{n}")
    with django_assert_max_num_queries(len(few.captured_queries)):
        admin_client.get("/users/")


def test_adding_a_user_with_a_password(admin_client, alice, sre):
    response = admin_client.post(
        "/users/new/",
        {
            "username": "rob",
            "roles": ["reviewer"],
            "agents": ["sre-agent"],
            "password": "a-long-pass-77",
        },
    )
    rob = User.objects.get(username="rob")
    assert response.status_code == 302 and response["Location"] == f"/users/{rob.pk}/"
    assert user_roles(rob) == ["reviewer"] and rob.check_password("a-long-pass-77")
    assert list(ReviewerScope.objects.filter(user=rob).values_list("agent__slug", flat=True)) == [
        "sre-agent"
    ]
    created = events("user.created")[-1]
    assert created.actor == alice and created.after == {
        "roles": ["reviewer"],
        "agents": ["sre-agent"],
    }
    assert events("reviewer.scope_set")[-1].after == {"agents": ["sre-agent"]}
    assert Client().login(username="rob", password="a-long-pass-77")


def test_adding_a_user_without_a_password_shows_a_sign_in_link_once(admin_client):
    response = admin_client.post("/users/new/", {"username": "ivy", "roles": ["auditor"]})
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    html = response.content.decode()
    link = re.search(r'id="invitation-link">(http://testserver/accounts/reset/[^<]+)<', html).group(
        1
    )
    ivy = User.objects.get(username="ivy")
    assert not ivy.has_usable_password()
    assert events("user.invitation_issued")[-1].object_id == str(ivy.pk)
    assert link not in admin_client.get(f"/users/{ivy.pk}/").content.decode()

    # The link lets ivy choose a password on the console's own page, then sign in.
    visitor = Client()
    form = visitor.get(link.removeprefix("http://testserver"), follow=True)
    assert "Choose a password" in form.content.decode()
    done = visitor.post(
        form.redirect_chain[-1][0],
        {"new_password1": "ivy-chooses-this-1", "new_password2": "ivy-chooses-this-1"},
        follow=True,
    )
    assert "Password set" in done.content.decode()
    assert Client().login(username="ivy", password="ivy-chooses-this-1")
    # Used once: the same link no longer works.
    again = Client().get(link.removeprefix("http://testserver"), follow=True)
    assert "This link no longer works" in again.content.decode()


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"username": "", "roles": ["auditor"]}, "username", "Enter a username."),
        ({"username": "bad name!", "roles": ["auditor"]}, "username", "Enter a valid username"),
        (
            {"username": "RITA", "roles": ["auditor"]},
            "username",
            "A user named RITA already exists.",
        ),
        ({"username": "x" * 151, "roles": ["auditor"]}, "username", "At most 150 characters."),
        ({"username": "zed"}, "roles", "Choose at least one role."),
        ({"username": "zed", "roles": ["root"]}, "roles", "Select a valid choice"),
        (
            {"username": "zed", "roles": ["admin"], "agents": ["sre-agent"]},
            "agents",
            "Only reviewers can be limited to some agents",
        ),
        ({"username": "zed", "roles": ["auditor"], "password": "zed"}, "password", "too short"),
    ],
)
def test_refused_input_names_the_field_and_writes_nothing(
    admin_client, rita, sre, data, field, message
):
    before = (User.objects.count(), GovernanceEvent.objects.count())
    response = admin_client.post("/users/new/", data)
    assert response.status_code == 200
    html = response.content.decode()
    errors = re.search(rf'id="field-{field}".*?<ul class="errorlist"[^>]*>(.*?)</ul>', html, re.S)
    assert errors and message in errors.group(1), html[:3000]
    assert (User.objects.count(), GovernanceEvent.objects.count()) == before


def test_setting_roles_and_scope(admin_client, alice, rita, sre, other):
    response = admin_client.post(
        f"/users/{rita.pk}/", {"roles": ["reviewer", "auditor"], "agents": ["other-agent"]}
    )
    assert response.status_code == 302
    assert user_roles(rita) == ["reviewer", "auditor"]
    assert list(ReviewerScope.objects.filter(user=rita).values_list("agent__slug", flat=True)) == [
        "other-agent"
    ]
    role_set = events("user.role_set")[-1]
    assert (role_set.before, role_set.after) == (
        {"roles": ["reviewer"]},
        {"roles": ["reviewer", "auditor"]},
    )
    assert role_set.actor == alice
    assert "Saved." in admin_client.get(f"/users/{rita.pk}/").content.decode()


def test_saving_the_same_roles_writes_nothing(admin_client, rita):
    before = GovernanceEvent.objects.count()
    response = admin_client.post(f"/users/{rita.pk}/", {"roles": ["reviewer"]}, follow=True)
    assert "Nothing changed." in response.content.decode()
    assert GovernanceEvent.objects.count() == before


def test_an_admin_cannot_take_their_own_admin_role(admin_client, alice, anna):
    response = admin_client.post(f"/users/{alice.pk}/", {"roles": ["reviewer"]})
    assert response.status_code == 200
    assert "You cannot take away your own admin role" in response.content.decode()
    assert user_roles(alice) == ["admin"]


def test_the_last_admin_keeps_the_role(alice, rita):
    before = GovernanceEvent.objects.count()
    with pytest.raises(UserProblems) as refused:
        user_update(actor=None, user=alice, roles=["reviewer"], agent_slugs=[])
    assert refused.value.problems == {
        "roles": ["alice is the last active admin: make someone else an admin first."]
    }
    assert user_roles(alice) == ["admin"] and GovernanceEvent.objects.count() == before


def test_a_superuser_counts_as_an_admin(alice):
    User.objects.create_superuser("root")
    user_update(actor=None, user=alice, roles=["auditor"], agent_slugs=[])
    assert user_roles(alice) == ["auditor"]


def test_an_unknown_user_is_404_in_the_console_layout(admin_client):
    response = admin_client.get("/users/999999/")
    assert response.status_code == 404


def test_linking_and_unlinking_a_slack_member(admin_client, alice, rita, audrey):
    response = admin_client.post(f"/users/{rita.pk}/slack/", {"slack_user_id": " U012AB3CD "})
    assert response.status_code == 302
    assert SlackIdentity.objects.get(user=rita).slack_user_id == "U012AB3CD"
    page = admin_client.get(f"/users/{rita.pk}/").content.decode()
    assert "Slack member set to U012AB3CD." in page and 'value="U012AB3CD"' in page

    taken = admin_client.post(f"/users/{audrey.pk}/slack/", {"slack_user_id": "U012AB3CD"})
    html = taken.content.decode()
    assert re.search(r'id="field-slack_user_id".*?Already linked to rita', html, re.S)
    bad = admin_client.post(f"/users/{audrey.pk}/slack/", {"slack_user_id": "#general"})
    assert "A member ID looks like U012AB3CD" in bad.content.decode()
    assert not SlackIdentity.objects.filter(user=audrey).exists()

    admin_client.post(f"/users/{rita.pk}/slack/", {"slack_user_id": ""})
    assert not SlackIdentity.objects.exists()
    events = GovernanceEvent.objects.filter(action="reviewer.slack_set").order_by("id")
    assert [(e.actor, e.after) for e in events] == [
        (alice, {"slack_user_id": "U012AB3CD"}),
        (alice, {"slack_user_id": None}),
    ]
