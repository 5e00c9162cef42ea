"""Linking console users to Slack members: the service (admins only, audited, validated),
`manage.py set_slack_member` and the Django admin, which both go through it."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client

from approvals import services
from approvals.models import SlackIdentity
from console.errors import Forbidden, InvalidInput
from console.governance.models import GovernanceEvent


def test_admin_links_a_reviewer_and_the_change_is_audited(alice, rita):
    identity = services.slack_identity_set(actor=alice, user=rita, slack_user_id=" U012AB3CD ")
    assert identity is not None and identity.slack_user_id == "U012AB3CD"
    event = GovernanceEvent.objects.get(action="reviewer.slack_set")
    assert event.actor == alice and event.object_id == str(rita.pk)
    assert (event.before, event.after) == ({"slack_user_id": None}, {"slack_user_id": "U012AB3CD"})


def test_setting_the_same_id_again_changes_nothing(rita):
    services.slack_identity_set(actor=None, user=rita, slack_user_id="U012AB3CD")
    services.slack_identity_set(actor=None, user=rita, slack_user_id="U012AB3CD")
    assert GovernanceEvent.objects.filter(action="reviewer.slack_set").count() == 1


def test_an_empty_id_unlinks(rita):
    services.slack_identity_set(actor=None, user=rita, slack_user_id="U012AB3CD")
    assert services.slack_identity_set(actor=None, user=rita, slack_user_id="") is None
    assert not SlackIdentity.objects.exists()
    assert GovernanceEvent.objects.filter(action="reviewer.slack_set").count() == 2


@pytest.mark.parametrize("bad", ["u012ab3cd", "C012AB3CD", "U0", "<@U012AB3CD>", "U012 AB3"])
def test_what_is_not_a_member_id_is_refused_by_pointer(rita, bad):
    with pytest.raises(InvalidInput) as refused:
        services.slack_identity_set(actor=None, user=rita, slack_user_id=bad)
    assert set(refused.value.fields) == {"/slack_user_id"}
    assert not SlackIdentity.objects.exists()


def test_one_slack_member_is_one_console_user(rita, alice):
    services.slack_identity_set(actor=None, user=rita, slack_user_id="U012AB3CD")
    with pytest.raises(InvalidInput) as refused:
        services.slack_identity_set(actor=None, user=alice, slack_user_id="U012AB3CD")
    assert refused.value.fields == {"/slack_user_id": ["Already linked to rita."]}
    assert SlackIdentity.objects.get().user == rita


def test_only_admins_link_accounts(rita):
    with pytest.raises(Forbidden):
        services.slack_identity_set(actor=rita, user=rita, slack_user_id="U012AB3CD")
    assert not SlackIdentity.objects.exists()


def test_command_links_and_unlinks(rita):
    out = io.StringIO()
    call_command("set_slack_member", "rita", "U012AB3CD", stdout=out)
    assert "rita is Slack member U012AB3CD." in out.getvalue()
    call_command("set_slack_member", "rita", "", stdout=out)
    assert "rita is not linked" in out.getvalue()
    assert not SlackIdentity.objects.exists()


def test_command_names_what_is_wrong(rita):
    with pytest.raises(CommandError, match="No user 'nobody'"):
        call_command("set_slack_member", "nobody", "U012AB3CD")
    with pytest.raises(CommandError, match="Not a Slack member ID"):
        call_command("set_slack_member", "rita", "#general")


def test_django_admin_adds_and_deletes_through_the_service(rita):
    root = User.objects.create_superuser("root", password="pw-root")
    client = Client()
    client.force_login(root)
    added = client.post(
        "/admin/approvals/slackidentity/add/", {"user": rita.pk, "slack_user_id": "W0GRID001"}
    )
    assert added.status_code == 302
    identity = SlackIdentity.objects.get(user=rita)
    bad = client.post(
        "/admin/approvals/slackidentity/add/", {"user": root.pk, "slack_user_id": "nope"}
    )
    assert bad.status_code == 200 and "looks like U012AB3CD" in bad.content.decode()
    client.post(f"/admin/approvals/slackidentity/{identity.pk}/delete/", {"post": "yes"})
    assert not SlackIdentity.objects.exists()
    actors = GovernanceEvent.objects.filter(action="reviewer.slack_set").values_list(
        "actor__username", flat=True
    )
    assert list(actors) == ["root", "root"]
