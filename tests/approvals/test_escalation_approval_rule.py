"""POST /api/v1/escalations: the console, not the agent, decides which approval rule applies.

The rule (approvals/rules.py): the approval hooks of the effective configuration (agent level,
then the custom agent named in meta) whose matcher matches the tool; the strictest of them
governs (most approvals, shortest expiry); a named hook must be one that applies to the call;
with no approval hook matching, only a command or prompt hook that asked may escalate, with the
console default.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from agents import services as agent_services
from agents.models import CustomAgent, Hook
from approvals import services
from approvals.models import Escalation
from console.actors import AgentPrincipal
from console.errors import InvalidInput
from console.governance.models import GovernanceEvent
from tests.approvals.conftest import approval_request, post_escalation
from tests.conftest import AgentWithToken

DAY, MONTH = 24 * 3600, 30 * 24 * 3600
ASK = {"type": "command", "matcher": "restart_service", "command": "echo ask"}


def hook(sre: AgentWithToken, raw: dict[str, Any], *, event: str = "PreToolUse", **kw: Any) -> Hook:
    created, _warnings = agent_services.hook_create(
        actor=None,
        agent=sre.agent,
        custom_agent=kw.get("custom_agent"),
        event=event,
        raw=raw,
    )
    return created


def approval(matcher: str = "restart_service", **options: Any) -> dict[str, Any]:
    return {"type": "approval", "matcher": matcher, **options}


def custom_agent(sre: AgentWithToken, name: str = "ops") -> CustomAgent:
    return agent_services.custom_agent_create(actor=None, agent=sre.agent, name=name)


def created(response: Any) -> Escalation:
    assert response.status_code == 201, response.content
    return Escalation.objects.get(pk=response.json()["id"])


def refused(response: Any, at: str) -> str:
    assert response.status_code == 400, response.content
    fields = response.json()["error"]["fields"]
    assert at in fields, fields
    assert not Escalation.objects.exists()
    assert not GovernanceEvent.objects.filter(action="escalation.created").exists()
    return " ".join(fields[at])


def seconds_left(escalation: Escalation) -> float:
    return (escalation.expires_at - timezone.now()).total_seconds()


# The attack: the agent names a lenient hook of another tool ------------------------


def test_naming_a_lenient_hook_of_another_tool_is_refused(client, sre):
    hook(sre, approval("restart_service", approvalsRequired=3))
    lenient = hook(sre, approval("read_logs", approvalsRequired=1, expiresIn=MONTH))
    message = refused(
        post_escalation(client, sre, approval_request("restart_service"), hook=lenient.key),
        "/meta/hook",
    )
    assert "does not match tool 'restart_service'" in message


def test_naming_a_lenient_hook_in_the_verdict_is_refused_too(client, sre):
    hook(sre, approval("restart_service", approvalsRequired=3))
    lenient = hook(sre, approval("read_logs", approvalsRequired=1, expiresIn=MONTH))
    request = approval_request("restart_service", hook_key=lenient.key)
    refused(post_escalation(client, sre, request), "/request/verdict/approval/hook")


def test_naming_no_hook_gets_the_matching_hooks_rule_not_a_default(client, sre):
    strict = hook(sre, approval("restart_service", approvalsRequired=3, expiresIn=DAY))
    escalation = created(post_escalation(client, sre, approval_request("restart_service")))
    assert escalation.approvals_required == 3
    assert DAY - 10 < seconds_left(escalation) <= DAY
    assert escalation.hook == strict


def test_the_strictest_matching_hook_wins_whichever_matching_hook_is_named(client, sre):
    lenient = hook(sre, approval("restart_.*", approvalsRequired=1, expiresIn=MONTH))
    hook(sre, approval("restart_service", approvalsRequired=3, expiresIn=DAY))
    response = post_escalation(client, sre, approval_request("restart_service"), hook=lenient.key)
    escalation = created(response)
    assert escalation.approvals_required == 3
    assert DAY - 10 < seconds_left(escalation) <= DAY
    assert escalation.hook == lenient  # the hook that escalated is what the row names
    event = GovernanceEvent.objects.get(action="escalation.created")
    assert event.after["approvals_required"] == 3
    assert len(event.after["rule_hooks"]) == 2


def test_strictest_takes_most_approvals_and_shortest_expiry_from_different_hooks(client, sre):
    hook(sre, approval("restart_service", approvalsRequired=3, expiresIn=DAY))
    quick = hook(sre, approval("*", approvalsRequired=2, expiresIn=120))
    escalation = created(post_escalation(client, sre, approval_request("restart_service")))
    assert escalation.approvals_required == 3
    assert 110 < seconds_left(escalation) <= 120
    assert escalation.hook != quick  # recorded: the first hook requiring the most approvals


def test_the_quorum_the_agent_claims_in_its_verdict_is_ignored(client, sre):
    strict = hook(sre, approval("restart_service", approvalsRequired=3))
    request = approval_request("restart_service", hook_key=strict.key)
    request["verdict"]["approval"].update({"approvals_required": 1, "expires_in": MONTH})
    escalation = created(post_escalation(client, sre, request))
    assert escalation.approvals_required == 3
    assert seconds_left(escalation) <= 600


# What the console refuses ------------------------------------------------------------------


def test_a_call_no_approval_hook_matches_is_refused(client, sre):
    hook(sre, approval("scale_deployment", approvalsRequired=2))
    message = refused(
        post_escalation(client, sre, approval_request("restart_service")),
        "/request/context/tool_call/name",
    )
    assert "No approval hook" in message


def test_an_agent_without_hooks_cannot_escalate(client, sre):
    refused(
        post_escalation(client, sre, approval_request("restart_service")),
        "/request/context/tool_call/name",
    )


def test_a_tool_name_in_meta_that_differs_from_the_tool_call_is_refused(client, sre):
    hook(sre, approval("restart_service|read_logs"))
    refused(
        post_escalation(client, sre, approval_request("restart_service"), tool_name="read_logs"),
        "/meta/tool_name",
    )


def test_a_disabled_hook_cannot_be_named(client, sre):
    hook(sre, approval("restart_service", approvalsRequired=2))
    off = hook(sre, {**approval("restart_service"), "enabled": False})
    message = refused(
        post_escalation(client, sre, approval_request("restart_service"), hook=off.key),
        "/meta/hook",
    )
    assert "disabled" in message


def test_a_shadow_hook_cannot_be_named_nor_set_the_rule(client, sre):
    hook(sre, approval("restart_service", approvalsRequired=2))
    shadow = hook(sre, {**approval("restart_service", approvalsRequired=5), "mode": "shadow"})
    message = refused(
        post_escalation(client, sre, approval_request("restart_service"), hook=shadow.key),
        "/meta/hook",
    )
    assert "shadow" in message
    escalation = created(post_escalation(client, sre, approval_request("restart_service")))
    assert escalation.approvals_required == 2


def test_a_hook_of_another_event_cannot_be_named(client, sre):
    hook(sre, approval("restart_service"))
    post = hook(
        sre,
        {"type": "command", "matcher": "restart_service", "command": "true"},
        event="PostToolUse",
    )
    message = refused(
        post_escalation(client, sre, approval_request("restart_service"), hook=post.key),
        "/meta/hook",
    )
    assert "PostToolUse" in message


def test_two_different_hook_names_are_refused(client, sre):
    first = hook(sre, approval("restart_service"))
    second = hook(sre, approval("restart_service"))
    request = approval_request("restart_service", hook_key=first.key)
    refused(post_escalation(client, sre, request, hook=second.key), "/meta/hook")


def test_only_pre_tool_call_escalates(client, sre):
    hook(sre, approval("restart_service"))
    request = approval_request("restart_service")
    request["interception_point"] = "input"
    del request["context"]
    refused(post_escalation(client, sre, request), "/request/interception_point")


# Custom agents -----------------------------------------------------------------------------


def test_a_custom_agents_approval_hook_applies_when_it_runs_as_that_custom_agent(client, sre):
    ops = custom_agent(sre)
    hook(sre, approval("restart_service", approvalsRequired=1))
    strict = hook(sre, approval("restart_service", approvalsRequired=3), custom_agent=ops)
    escalation = created(
        post_escalation(client, sre, approval_request("restart_service"), custom_agent="ops")
    )
    assert escalation.approvals_required == 3
    assert escalation.hook == strict
    assert escalation.custom_agent_name == "ops"
    rule_hooks = GovernanceEvent.objects.get(action="escalation.created").after["rule_hooks"]
    assert rule_hooks[1] == strict.key  # agent level first, then the custom agent's


def test_a_custom_agents_hook_cannot_be_named_from_the_agent_level(client, sre):
    ops = custom_agent(sre)
    hook(sre, approval("restart_service", approvalsRequired=3))
    theirs = hook(sre, approval("restart_service", approvalsRequired=1), custom_agent=ops)
    message = refused(
        post_escalation(client, sre, approval_request("restart_service"), hook=theirs.key),
        "/meta/hook",
    )
    assert "custom agent 'ops'" in message


def test_another_custom_agents_hooks_do_not_apply(client, sre):
    custom_agent(sre, "ops")
    triage = custom_agent(sre, "triage")
    hook(sre, approval("restart_service", approvalsRequired=3), custom_agent=triage)
    refused(
        post_escalation(client, sre, approval_request("restart_service"), custom_agent="ops"),
        "/request/context/tool_call/name",
    )


def test_an_unknown_custom_agent_is_refused(client, sre):
    hook(sre, approval("restart_service"))
    refused(
        post_escalation(client, sre, approval_request("restart_service"), custom_agent="ghost"),
        "/meta/custom_agent",
    )


# A command or prompt hook that answered `ask` ----------------------------------------------


def test_a_command_hook_that_asked_escalates_with_the_console_default(client, sre, settings):
    settings.CONSOLE_DEFAULT_ESCALATION_SECONDS = 300
    asker = hook(sre, ASK)
    request = approval_request("restart_service", hook_key=asker.key)
    escalation = created(post_escalation(client, sre, request, hook=asker.key))
    assert escalation.approvals_required == 1
    assert 290 < seconds_left(escalation) <= 300
    assert escalation.hook == asker


def test_an_ask_does_not_lower_the_quorum_of_an_approval_hook_on_the_same_call(client, sre):
    # Under sequential/run_all both deny; the SDK consults the resolver with the first one.
    asker = hook(sre, ASK)
    hook(sre, approval("restart_service", approvalsRequired=3, expiresIn=DAY))
    request = approval_request("restart_service", hook_key=asker.key)
    escalation = created(post_escalation(client, sre, request, hook=asker.key))
    assert escalation.approvals_required == 3
    assert DAY - 10 < seconds_left(escalation) <= DAY
    assert escalation.hook == asker


def test_an_ask_must_name_its_hook_when_no_approval_hook_matches(client, sre):
    hook(sre, ASK)
    refused(
        post_escalation(client, sre, approval_request("restart_service")),
        "/request/context/tool_call/name",
    )


def test_an_asking_hook_that_does_not_match_the_tool_is_refused(client, sre):
    asker = hook(sre, {**ASK, "matcher": "read_logs"})
    refused(
        post_escalation(client, sre, approval_request("restart_service"), hook=asker.key),
        "/meta/hook",
    )


# The service, as other callers (server-side hook evaluation) use it ------------------------


def test_the_service_without_a_context_uses_meta_tool_name(sre):
    strict = hook(sre, approval("restart_service", approvalsRequired=2))
    token = sre.agent.tokens.get()
    principal = AgentPrincipal(agent=sre.agent, token=token)
    request = {
        "context_identity": "sess-1:2",
        "interception_point": "pre_tool_call",
        "verdict": {"decision": "deny", "reason": "console:approval_required", "approval": {}},
    }
    escalation, fresh = services.escalation_create(
        actor=principal, request=request, meta={"tool_name": "restart_service"}
    )
    assert fresh and escalation.approvals_required == 2 and escalation.hook == strict
    with pytest.raises(InvalidInput) as caught:
        services.escalation_create(
            actor=principal,
            request={**request, "context_identity": "sess-1:3"},
            meta={"tool_name": "read_logs"},
        )
    assert "/meta/tool_name" in caught.value.fields


def test_a_hook_changed_after_the_escalation_keeps_the_first_answer_for_a_retry(client, sre):
    strict = hook(sre, approval("restart_service", approvalsRequired=2))
    request = approval_request("restart_service")
    first = created(post_escalation(client, sre, request))
    agent_services.hook_set_enabled(actor=None, hook=strict, enabled=False)
    again = post_escalation(client, sre, request)
    assert again.status_code == 200 and again.json()["id"] == str(first.pk)
    assert Escalation.objects.count() == 1
    assert first.expires_at - timezone.now() <= timedelta(seconds=600)


def test_an_overlong_tool_name_or_hook_key_is_refused_before_any_matching(client, sre):
    hook(sre, approval("*"))
    refused(
        post_escalation(client, sre, approval_request("t" * 201)),
        "/request/context/tool_call/name",
    )
    request = approval_request("restart_service", hook_key="hk_" + "x" * 5000)
    message = refused(post_escalation(client, sre, request), "/request/verdict/approval/hook")
    assert "x" * 100 not in message
