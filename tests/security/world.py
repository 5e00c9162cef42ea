"""One committed world for the security tests: personas, their credentials and objects that
belong to agent `sre-agent`.

Personas (the matrix columns):

    anon            no credentials
    admin           alice, admin group (session)
    rev             rita, reviewer scoped to sre-agent (session)
    rev_other       ross, reviewer scoped to other-agent only (session)
    auditor         audrey, auditor (session)
    norole          charlie, logged in, no role (session)
    agent           live agent token of sre-agent
    agent_other     live agent token of other-agent
    agent_revoked   revoked agent token of sre-agent
    pat_<role>      personal API token of admin / rev / rev_other / auditor / norole
    pat_revoked     revoked personal API token of alice (an admin)

`build_world()` writes with autocommit (the caller unblocks the database and flushes it
afterwards); every request the tests make runs in a transaction that is rolled back, so each
one sees the same world.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connections
from django.test import Client
from django.utils import timezone

from agents import services as agent_services
from agents.hook_samples import hook_sample_save
from agents.models import Agent, ConfigRevision, CustomAgent, Hook
from agents.views_hooktest import status_token
from approvals import services as approval_services
from approvals.links import decision_link_token
from approvals.models import Escalation, EscalationVote
from audit.models import ChainVerification, InterceptionRecord, RecordExport, SavedView
from audit.verification import chain_verification_start
from console import services as console_services
from console.governance.models import GovernanceEvent
from console.models import ApiToken
from tests.approvals.conftest import approval_request
from tests.audit.record_wires import items, sdk_session

SESSION_PERSONAS = ("admin", "rev", "rev_other", "auditor", "norole")
AGENT_PERSONAS = ("agent", "agent_other", "agent_revoked")
PAT_PERSONAS = tuple(f"pat_{name}" for name in SESSION_PERSONAS) + ("pat_revoked",)
PERSONAS = ("anon", *SESSION_PERSONAS, *AGENT_PERSONAS, *PAT_PERSONAS)

SRE, OTHER = "sre-agent", "other-agent"
APPROVAL_DOC = {"type": "approval", "matcher": "restart_service"}
CUSTOM = "triage"
# Strings only sre-agent's objects contain: a foreign persona's 2xx body must hold none.
SRE_MARKER = "sre-only-instructions-7f3a"
SRE_SESSION = "sre-session-9c1e"

USERS = {
    "admin": ("alice", "admin"),
    "rev": ("rita", "reviewer"),
    "rev_other": ("ross", "reviewer"),
    "auditor": ("audrey", "auditor"),
    "norole": ("charlie", None),
}

HOOK_DOC = {
    "type": "command",
    "matcher": "Bash",
    "command": "exit 0",
    "timeout": 10,
}


@dataclass
class World:
    users: dict[str, User]
    sre: Agent
    other: Agent
    tokens: dict[str, str]  # persona -> bearer token
    hook: Hook  # agent-level hook of sre-agent
    custom_agent: CustomAgent  # sre-agent's custom agent `triage`
    custom_hook: Hook  # triage's hook
    sample_pk: int  # a saved "Test this hook" sample of `hook`
    spare_token_pk: int  # a live sre-agent token the token-revoke row aims at
    revision: int  # sre-agent's first revision (rolling back to it changes the hooks)
    escalation: Escalation  # pending, sre-agent
    record: InterceptionRecord  # of sre-agent, in SRE_SESSION
    export: RecordExport  # a complete export of sre-agent's records, by the auditor
    person_token_pk: int  # the no-role person's live personal token (the user pages' target)
    inactive_pk: int  # a deactivated user (the reactivate row's target)
    verification: ChainVerification  # a "Verify chain" run of every agent, by the auditor
    saved_view: SavedView  # the auditor's saved view of the record explorer
    sessions: dict[str, str] = field(default_factory=dict)  # persona -> sessionid cookie

    def markers(self) -> list[str]:
        return [
            SRE_MARKER,
            SRE_SESSION,
            self.hook.key,
            self.custom_hook.key,
            str(self.escalation.pk),
        ]

    def client(self, persona: str, **kwargs: Any) -> Client:
        client = Client(**kwargs)
        if persona in self.sessions:
            client.cookies["sessionid"] = self.sessions[persona]
        return client

    def headers(self, persona: str) -> dict[str, str]:
        token = self.tokens.get(persona)
        return {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}

    def fmt(self, template: str) -> str:
        return template.format(
            sre=SRE,
            other=OTHER,
            custom=CUSTOM,
            hook=self.hook.key,
            custom_hook=self.custom_hook.key,
            token=self.spare_token_pk,
            revision=self.revision,
            escalation=self.escalation.pk,
            record=self.record.pk,
            session=SRE_SESSION,
            link=decision_link_token(self.escalation),
            export=self.export.pk,
            person=self.users["norole"].pk,
            person_token=self.person_token_pk,
            inactive=self.inactive_pk,
            # A run that never finishes: the status page answers "still running".
            sample=self.sample_pk,
            hook_test_run=status_token(self.hook.agent, "matrix-run", self.hook, "PostToolUse"),
            verification=self.verification.pk,
            saved_view=self.saved_view.pk,
        )


def _user(username: str, role: str | None) -> User:
    if role is None:
        user = User.objects.create_user(username=username)
        user.set_unusable_password()
        user.save(update_fields=["password"])
        return user
    return console_services.user_set_role(actor=None, username=username, role=role)


def _session_cookie(user: User) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


def _ingest_records(token: str) -> None:
    wires = sdk_session(["ls", "rm"], session_id=SRE_SESSION)
    response = Client().post(
        "/api/v1/records",
        data=json.dumps(items(wires, framework="agent_framework")),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 202, response.content


def _escalate(token: str) -> Escalation:
    body = {"request": approval_request("restart_service", {"service": "api"}), "meta": {}}
    response = Client().post(
        "/api/v1/escalations",
        data=json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 201, response.content
    return Escalation.objects.get(pk=response.json()["id"])


def build_world() -> World:
    users = {persona: _user(*USERS[persona]) for persona in SESSION_PERSONAS}
    sre = agent_services.agent_create(actor=None, slug=SRE)
    other = agent_services.agent_create(actor=None, slug=OTHER)
    approval_services.reviewer_scope_set(actor=None, user=users["rev"], agents=[sre])
    approval_services.reviewer_scope_set(actor=None, user=users["rev_other"], agents=[other])

    tokens = {
        "agent": agent_services.agent_token_issue(actor=None, agent=sre, name="main").plaintext,
        "agent_other": agent_services.agent_token_issue(
            actor=None, agent=other, name="main"
        ).plaintext,
    }
    revoked = agent_services.agent_token_issue(actor=None, agent=sre, name="old")
    agent_services.agent_token_revoke(actor=None, token=revoked.token)
    tokens["agent_revoked"] = revoked.plaintext
    spare = agent_services.agent_token_issue(actor=None, agent=sre, name="spare")
    personal_tokens = {}
    for persona in SESSION_PERSONAS:
        personal_tokens[persona] = console_services.api_token_issue(actor=None, user=users[persona])
        tokens[f"pat_{persona}"] = personal_tokens[persona].plaintext
    dead = console_services.api_token_issue(actor=None, user=users["admin"], name="old")
    ApiToken.objects.filter(pk=dead.token.pk).update(revoked_at=timezone.now())
    tokens["pat_revoked"] = dead.plaintext

    hook, _ = agent_services.hook_create(
        actor=None, agent=sre, custom_agent=None, event="PostToolUse", raw=dict(HOOK_DOC)
    )
    # A sibling below it, so "move down" has somewhere to go.
    agent_services.hook_create(
        actor=None, agent=sre, custom_agent=None, event="PostToolUse", raw=dict(HOOK_DOC)
    )
    document = {
        "api_version": "azuresre.ai/v2",
        "kind": "ExtendedAgent",
        "metadata": {"name": CUSTOM},
        "spec": {"instructions": SRE_MARKER, "hooks": {"PostToolUse": [dict(HOOK_DOC)]}},
    }
    custom_agent, _created, _warnings = agent_services.custom_agent_put(
        actor=None, agent=sre, name=CUSTOM, document=document
    )
    custom_hook = Hook.objects.get(custom_agent=custom_agent)
    sample, _ = hook_sample_save(
        actor=None, hook=hook, name="sudo", context={"tool_name": "Bash"}, expected="block"
    )
    # Escalations are accepted only for calls an approval hook matches (approvals/rules.py).
    for agent in (sre, other):
        agent_services.hook_create(
            actor=None, agent=agent, custom_agent=None, event="PreToolUse", raw=dict(APPROVAL_DOC)
        )
    sre.refresh_from_db()
    _ingest_records(tokens["agent"])
    world = World(
        users=users,
        sre=sre,
        other=other,
        tokens=tokens,
        hook=hook,
        custom_agent=custom_agent,
        custom_hook=custom_hook,
        sample_pk=sample.pk,
        spare_token_pk=spare.token.pk,
        revision=ConfigRevision.objects.filter(agent=sre).order_by("number").first().number,
        escalation=_escalate(tokens["agent"]),
        record=InterceptionRecord.objects.filter(agent=sre, session_id=SRE_SESSION).first(),
        export=_export(users["auditor"]),
        person_token_pk=personal_tokens["norole"].token.pk,
        inactive_pk=User.objects.create_user("dora", is_active=False).pk,
        verification=chain_verification_start(actor=users["auditor"]),
        saved_view=SavedView.objects.create(owner=users["auditor"], name="Denied", query=""),
    )
    world.sessions = {p: _session_cookie(users[p]) for p in SESSION_PERSONAS}
    return world


def _export(auditor: User) -> RecordExport:
    """An export of sre-agent's records, streamed to the end (so its manifest is complete)."""
    client = Client()
    client.force_login(auditor)
    response = client.get("/api/v1/records/export", {"format": "jsonl", "agent": SRE})
    assert response.status_code == 200
    b"".join(response.streaming_content)
    return RecordExport.objects.get(pk=response["X-Export-Id"])


def fingerprint() -> tuple[int, ...]:
    """Counts that every state change moves (each service writes a governance event)."""
    return (
        GovernanceEvent.objects.count(),
        InterceptionRecord.objects.count(),
        Escalation.objects.count(),
        EscalationVote.objects.count(),
        # A chain verification's event is written when the run ends, after the commit.
        ChainVerification.objects.count(),
        # Saved views write no governance event (they change only their owner's list).
        SavedView.objects.count(),
    )


def flush_database() -> None:
    call_command("flush", verbosity=0, interactive=False)
    connections.close_all()
