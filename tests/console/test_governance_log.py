"""The governance log in the kernel: one catalogue of actions, refused otherwise; the table
the audit app created, taken over without moving a row; the actor named one way."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db import connection, transaction

from agents.auth import agent_principal
from agents.models import Agent, ConfigRevision
from agents.revisions import record_change
from console.actors import AgentPrincipal, actor_label, actor_user, is_agent
from console.governance.actions import GovernanceAction
from console.governance.models import GovernanceEvent
from console.governance.services import governance_event_record

pytestmark = pytest.mark.django_db


def test_an_action_outside_the_catalogue_is_refused_and_nothing_is_written(alice: User) -> None:
    before = GovernanceEvent.objects.count()
    with pytest.raises(ValueError, match="GovernanceAction"):
        governance_event_record(actor=alice, action="agent.exploded", summary="no such action")
    assert GovernanceEvent.objects.count() == before


def test_a_refused_action_rolls_back_the_change_it_describes(sre) -> None:
    # A service writes its change, then its event, in one transaction: a bad action
    # leaves neither (agents.revisions.record_change bumps the revision first).
    revisions = ConfigRevision.objects.count()
    number = sre.agent.revision
    with pytest.raises(ValueError), transaction.atomic():
        record_change(
            actor=None,
            agent=sre.agent,
            action="hooks.rewritten",  # type: ignore[arg-type]
            summary="not in the catalogue",
        )
    assert ConfigRevision.objects.count() == revisions
    assert Agent.objects.get(pk=sre.agent.pk).revision == number


def test_a_string_naming_a_catalogue_action_is_accepted(alice: User) -> None:
    event = governance_event_record(
        actor=alice, action="records.exported", summary="Exported records as csv"
    )
    assert event.action == GovernanceAction.RECORDS_EXPORTED == "records.exported"


def test_the_catalogue_holds_every_action_the_apps_write() -> None:
    written = {
        "agent.created", "agent.mode_changed", "agent.settings_changed", "hooks.replaced",
        "hook.created", "hook.updated", "hook.enabled", "hook.disabled", "hook.reordered",
        "hook.deleted", "hook.tested", "hook.sample_saved", "hook.sample_deleted",
        "custom_agent.created", "custom_agent.replaced",
        "custom_agent.updated", "custom_agent.deleted", "revision.rolled_back", "token.issued",
        "token.revoked", "user.created", "user.role_set", "user.deactivated",
        "user.reactivated", "user.invitation_issued", "escalation.created",
        "escalation.voted", "escalation.approved", "escalation.rejected", "escalation.expired",
        "escalation.cancelled", "escalation.payload_purged", "reviewer.scope_set",
        "reviewer.slack_set",
        "records.dead_lettered", "records.purged", "records.exported",
        "records.chain_verified", "governance.exported",
    }  # fmt: skip
    assert set(GovernanceAction.values) == written


def test_events_live_in_the_table_the_audit_app_created(alice: User, sre) -> None:
    assert GovernanceEvent._meta.db_table == "audit_governanceevent"
    assert GovernanceEvent._meta.app_label == "governance"
    event = governance_event_record(
        actor=alice,
        action=GovernanceAction.AGENT_MODE_CHANGED,
        summary="x" * 600,
        agent=sre.agent,
        target=sre.agent,
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT action, actor_label, agent_slug, object_type, object_id, summary "
            "FROM audit_governanceevent WHERE id = %s",
            [event.pk],
        )
        row = cursor.fetchone()
    assert row == (
        "agent.mode_changed",
        "alice",
        "sre-agent",
        "Agent",
        str(sre.agent.pk),
        "x" * 500,
    )
    assert event.actor == alice and event.agent == sre.agent


def test_an_agent_actor_is_named_by_its_slug_and_holds_no_user(sre) -> None:
    principal = agent_principal(sre.agent.tokens.get())
    assert isinstance(principal, AgentPrincipal) and is_agent(principal)
    event = governance_event_record(
        actor=principal, action=GovernanceAction.HOOKS_REPLACED, summary="s", agent=sre.agent
    )
    assert (event.actor, event.actor_label) == (None, "agent:sre-agent")
    assert actor_user(principal) is None and actor_label(None) == "system"


def test_people_and_the_system_are_not_agents(alice: User) -> None:
    assert not is_agent(alice) and not is_agent(None)
    assert actor_user(alice) == alice and actor_label(alice) == "alice"
