"""The authorization matrix: every URL pattern × the methods it serves × every persona →
the expected status (tests/security/test_authorization_matrix.py runs it).

The rules: every permission is checked per object, and an agent token never reads another
agent's data; each endpoint names who may call it (README "API"). Beyond those, the rows
below follow these decisions, each what an experienced user expects:

- Pages authenticate by session only. A bearer token (agent or personal) sent to a page is
  ignored, so the request is anonymous there: 302 to the login page, never the page.
- On the API a personal token carries its user's role exactly as a session does; a revoked
  or unknown token is 401 everywhere on the API (never silently anonymous).
- Objects of agent `sre-agent` (agent, custom agent, hooks, escalation, records, session):
  * another agent's token reads none of them: per-object reads are 404 (existence is not
    disclosed); list endpoints answer 200 with that token's own agent only (the body is
    checked for sre-agent's markers); `PUT /api/v2/extendedAgent/agents/triage` with it
    creates *its own* `triage` (201): names are per agent.
  * a reviewer scoped to another agent sees the escalation nowhere: its id is 404 on the API
    decision, on the page decision and on its page (`/approvals/<id>/`), lists and the inbox
    are 200 without it, and a bulk decision that names it is answered like any bulk post
    (302) but changes nothing.
- The agent long-poll `GET /api/v1/escalations/{id}` takes only an agent token: a session
  (no bearer header) is 401, a personal token 403, another agent's token 404.
- Agents never decide escalations (403, even their own); auditors read records but decide
  nothing; reviewers read no records (403).
- The OpenAPI document and its Swagger UI are for anyone authenticated, agent tokens and
  people without a role included ("anyone logged in").
- `/` sends a person to their role's home; a logged-in person without a role gets 403 (there
  is nothing for them), not a redirect back to the login form they just passed.
- Django's own account pages (login, logout (POST only), password change for anyone logged
  in, the password-reset pages for anyone) are as Django ships them.
- `/admin/` is Django admin, the superusers' back office (console.admin_site): one row in
  the test (anonymous and every console persona, admins included → the admin login). Console
  admins manage users under `/users/`.
- `POST /api/v1/integrations/slack/interactions` is authenticated by Slack's request
  signature alone: cookies and tokens neither help nor hurt. Unsigned → 401 for
  everyone; correctly signed (`SLACK_SECRET`, which the matrix test sets) → 200 for everyone,
  and as the Slack member is linked to no reviewer nothing is decided. It reads no session,
  so the CSRF rule does not apply to it (`csrf_exempt`).
- `/approvals/link/<token>/` (a signed decision link) is a reviewer page like the inbox: the
  link grants nothing by itself; out of scope is 404 as on the page decision.

Statuses: an int is the exact status; LOGIN is a 302 whose Location is the login page; a 302
int is a redirect anywhere else. Every request runs in a rolled-back transaction; `writes`
rows must change the stored state (a governance event, a record, a vote…) for exactly the
personas whose expected status is a success, except those in `no_write`, and every other
request must leave it untouched.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from agents.config_review import scope_revision
from tests.approvals.conftest import approval_request
from tests.audit.record_wires import items, sdk_session
from tests.security.world import AGENT_PERSONAS, CUSTOM, PERSONAS, SESSION_PERSONAS, World

LOGIN = "login"
Expect = dict[str, int | str]


def _fill(who: tuple[str, ...], ok: int | str, denied: int | str, persona: str) -> int | str:
    return ok if persona in who else denied


def page(ok: int | str, *who: str, denied: int = 403, **override: int | str) -> Expect:
    """A session page for the personas in `who`; other people `denied`; tokens anonymous."""
    expect: Expect = {p: LOGIN for p in PERSONAS}
    for persona in SESSION_PERSONAS:
        expect[persona] = _fill(who, ok, denied, persona)
    expect.update(override)
    return expect


def everyone(status: int | str) -> Expect:
    return dict.fromkeys(PERSONAS, status)


def api(ok: int, *who: str, denied: int = 403, **override: int) -> Expect:
    """An API endpoint for `who` (session persona names stand for their personal tokens
    too); an override of a session persona applies to its personal token as well."""
    expect: Expect = {"anon": 401, "agent_revoked": 401, "pat_revoked": 401}
    for persona in SESSION_PERSONAS:
        expect[persona] = expect[f"pat_{persona}"] = _fill(who, ok, denied, persona)
    for persona in AGENT_PERSONAS[:2]:
        expect[persona] = _fill(who, ok, denied, persona)
    for persona, status in override.items():
        expect[persona] = status
        if persona in SESSION_PERSONAS and f"pat_{persona}" not in override:
            expect[f"pat_{persona}"] = status
    return expect


Body = Any | Callable[[World], Any]


@dataclass(frozen=True)
class Row:
    route: str  # the resolver pattern, as the URL walk prints it
    method: str
    url: str  # World.fmt template
    expect: Expect
    data: Body = None
    content_type: str | None = None  # None: a form post
    writes: bool = False
    no_write: frozenset[str] = field(default_factory=frozenset)
    # Methods the view also answers that no row exercises (Django's own account views).
    also: frozenset[str] = frozenset()
    # Extra request headers (a request signature), added to the persona's own.
    headers: Callable[[World], dict[str, str]] | None = None
    # Why the CSRF rule does not apply (the view reads no session); empty: it applies.
    csrf_exempt: str = ""
    label: str = ""  # tells apart two rows of one route and method

    @property
    def id(self) -> str:
        return f"{self.method} /{self.route}" + (f" ({self.label})" if self.label else "")


def _json(value: Any) -> str:
    return json.dumps(value)


def _document(name: str, instructions: str) -> dict[str, Any]:
    return {
        "api_version": "azuresre.ai/v2",
        "kind": "ExtendedAgent",
        "metadata": {"name": name},
        "spec": {"instructions": instructions, "hooks": {"Stop": [{"prompt": "Done?"}]}},
    }


def _confirm(text: str | None, custom_agent: str = "") -> Callable[[World], dict[str, Any]]:
    """The Confirm button of a preview: the reviewed text and the scope's current revision."""

    def body(world: World) -> dict[str, Any]:
        base = scope_revision(world.sre, custom_agent)
        return {"step": "confirm", "base_revision": base, **({"text": text} if text else {})}

    return body


CLAUDE_CODE_PRE_TOOL_USE = {
    "session_id": "matrix-session",
    "cwd": "/tmp/project",
    "hook_event_name": "PreToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": "ls"},
    "tool_use_id": "toolu_matrix",
}


def _escalation_body(world: World) -> str:
    return _json({"request": approval_request("restart_service", {"service": "db"}), "meta": {}})


def _records_body(world: World) -> str:
    return _json(items(sdk_session(["ls"]), framework="agent_framework"))


SLACK_SECRET = "matrix-slack-signing-secret"
FORM = "application/x-www-form-urlencoded"


def _slack_click(world: World) -> str:
    """An Approve click on sre-agent's escalation by a Slack member linked to nobody."""
    payload = {
        "type": "block_actions",
        "user": {"id": "U0MATRIX01"},
        "response_url": "https://hooks.slack.com/actions/T0/1/matrix",
        "actions": [{"action_id": "escalation_approve", "value": str(world.escalation.pk)}],
    }
    return urlencode({"payload": _json(payload)})


def _slack_signature(world: World) -> dict[str, str]:
    stamp = str(int(time.time()))
    base = f"v0:{stamp}:{_slack_click(world)}".encode()
    digest = hmac.new(SLACK_SECRET.encode(), base, hashlib.sha256).hexdigest()
    return {"HTTP_X_SLACK_REQUEST_TIMESTAMP": stamp, "HTTP_X_SLACK_SIGNATURE": f"v0={digest}"}


def _dead_letters_body(world: World) -> str:
    report = {
        "batch": "b0d1e5",
        "records": 2,
        "status": 400,
        "error": "invalid: Item 0 is invalid at /0/record/session_id",
        "refused_at": "2026-11-30T06:51:49+00:00",
    }
    return _json([report])


JSON = "application/json"
# Django's FormView answers PUT as it answers POST.
DJANGO_FORM_VIEW = frozenset({"PUT"})
HOOK_FORM = {"name": "Done check", "event": "Stop", "type": "prompt", "prompt": "Done?"}
EDIT_FORM = {"name": "Bash gate", "type": "command", "matcher": "Bash", "command": "exit 1"}
ADMIN = ("admin",)
REVIEWERS = ("admin", "rev", "rev_other")
AUDITORS = ("admin", "auditor")
AGENT_OR_ADMIN = ("admin", "agent", "agent_other")
A = "agents/<str:slug>/"
C = A + "custom/<str:name>/"
H = A + "hooks/<str:key>/"
U = "users/<int:pk>/"

ROWS: list[Row] = [
    # console ------------------------------------------------------------------------------
    Row("", "GET", "/", page(302, "admin", "rev", "rev_other", "auditor")),
    Row("healthz", "GET", "/healthz", everyone(200)),
    Row("accounts/login/", "GET", "/accounts/login/", everyone(200)),
    Row(
        "accounts/login/",
        "POST",
        "/accounts/login/",
        everyone(200),
        {"username": "nobody", "password": "wrong"},
        also=DJANGO_FORM_VIEW,
    ),
    Row("accounts/logout/", "POST", "/accounts/logout/", everyone(LOGIN)),
    Row(
        "accounts/password_change/",
        "GET",
        "/accounts/password_change/",
        page(200, *SESSION_PERSONAS),
    ),
    Row(
        "accounts/password_change/",
        "POST",
        "/accounts/password_change/",
        page(200, *SESSION_PERSONAS),
        {},
        also=DJANGO_FORM_VIEW,
    ),
    Row(
        "accounts/password_change/done/",
        "GET",
        "/accounts/password_change/done/",
        page(200, *SESSION_PERSONAS),
    ),
    Row("accounts/password_reset/", "GET", "/accounts/password_reset/", everyone(200)),
    Row(
        "accounts/password_reset/",
        "POST",
        "/accounts/password_reset/",
        everyone(302),
        {"email": "nobody@example.invalid"},
        also=DJANGO_FORM_VIEW,
    ),
    Row("accounts/password_reset/done/", "GET", "/accounts/password_reset/done/", everyone(200)),
    # An invalid link renders "invalid link" whatever the method (Django's dispatch).
    Row(
        "accounts/reset/<uidb64>/<token>/",
        "GET",
        "/accounts/reset/MQ/bad-token/",
        everyone(200),
        also=frozenset({"PUT", "PATCH", "DELETE"}),
    ),
    Row(
        "accounts/reset/<uidb64>/<token>/",
        "POST",
        "/accounts/reset/MQ/bad-token/",
        everyone(200),
        {},
    ),
    Row("accounts/reset/done/", "GET", "/accounts/reset/done/", everyone(200)),
    Row("api/schema/", "GET", "/api/schema/", api(200, *SESSION_PERSONAS, "agent", "agent_other")),
    Row("api/docs/", "GET", "/api/docs/", api(200, *SESSION_PERSONAS, "agent", "agent_other")),
    # agents API ---------------------------------------------------------------------------
    Row(
        "api/v2/extendedAgent/agents",
        "GET",
        "/api/v2/extendedAgent/agents?agent={sre}",
        api(200, *AGENT_OR_ADMIN),
    ),
    Row(
        "api/v2/extendedAgent/agents/<str:name>",
        "GET",
        "/api/v2/extendedAgent/agents/{custom}?agent={sre}",
        api(200, *AGENT_OR_ADMIN, agent_other=404),
    ),
    Row(
        "api/v2/extendedAgent/agents/<str:name>",
        "PUT",
        "/api/v2/extendedAgent/agents/{custom}?agent={sre}",
        api(200, *AGENT_OR_ADMIN, agent_other=201),
        _json(_document("triage", "replaced")),
        JSON,
        writes=True,
    ),
    Row(
        "api/v2/extendedAgent/agents/<str:name>",
        "DELETE",
        "/api/v2/extendedAgent/agents/{custom}?agent={sre}",
        api(204, *AGENT_OR_ADMIN, agent_other=404),
        writes=True,
    ),
    Row("api/v1/agent/hooks", "GET", "/api/v1/agent/hooks?agent={sre}", api(200, *AGENT_OR_ADMIN)),
    Row(
        "api/v1/agent/hooks",
        "PUT",
        "/api/v1/agent/hooks?agent={sre}",
        api(200, *AGENT_OR_ADMIN),
        _json({"hooks": {"Stop": [{"prompt": "Done?"}]}}),
        JSON,
        writes=True,
    ),
    Row(
        "api/v1/declaration",
        "GET",
        "/api/v1/declaration?custom_agent={custom}",
        api(200, "agent", agent_other=404),
    ),
    # Other agent runtimes' hooks: agent tokens only; another agent's token
    # cannot name sre-agent's custom agent (404); every answered call stores a record.
    Row(
        "api/v1/hooks/<str:runtime>",
        "POST",
        "/api/v1/hooks/claude-code?custom_agent={custom}",
        api(
            200,
            "agent",
            agent_other=404,
            **dict.fromkeys(SESSION_PERSONAS, 401),
            **{f"pat_{p}": 403 for p in SESSION_PERSONAS},
        ),
        _json(CLAUDE_CODE_PRE_TOOL_USE),
        JSON,
        writes=True,
    ),
    Row(
        "api/v1/connect/<str:runtime>",
        "GET",
        "/api/v1/connect/claude-code?agent={sre}&custom_agent={custom}",
        api(200, *AGENT_OR_ADMIN, agent_other=404),
    ),
    # approvals API ------------------------------------------------------------------------
    Row("api/v1/escalations", "GET", "/api/v1/escalations?status=all", api(200, *REVIEWERS)),
    Row(
        "api/v1/escalations",
        "POST",
        "/api/v1/escalations",
        api(201, "agent", "agent_other"),
        _escalation_body,
        JSON,
        writes=True,
    ),
    Row(
        "api/v1/escalations/<str:pk>",
        "GET",
        "/api/v1/escalations/{escalation}",
        api(
            200,
            "agent",
            agent_other=404,
            **dict.fromkeys(SESSION_PERSONAS, 401),
            **{f"pat_{p}": 403 for p in SESSION_PERSONAS},
        ),
    ),
    Row(
        "api/v1/escalations/<str:pk>/decision",
        "POST",
        "/api/v1/escalations/{escalation}/decision",
        api(200, "admin", "rev", rev_other=404),
        _json({"outcome": "approve", "reason": "fine"}),
        JSON,
        writes=True,
    ),
    Row(
        "api/v1/integrations/slack/interactions",
        "POST",
        "/api/v1/integrations/slack/interactions",
        everyone(401),
        _slack_click,
        FORM,
        label="unsigned",
    ),
    Row(
        "api/v1/integrations/slack/interactions",
        "POST",
        "/api/v1/integrations/slack/interactions",
        everyone(200),
        _slack_click,
        FORM,
        headers=_slack_signature,
        csrf_exempt="authenticated by Slack's signature; no session is read",
        label="signed, member linked to nobody",
    ),
    # audit API ----------------------------------------------------------------------------
    Row(
        "api/v1/records",
        "POST",
        "/api/v1/records",
        api(202, "agent", "agent_other"),
        _records_body,
        JSON,
        writes=True,
    ),
    Row(
        "api/v1/records/dead-letters",
        "POST",
        "/api/v1/records/dead-letters",
        api(202, "agent", "agent_other"),
        _dead_letters_body,
        JSON,
        writes=True,
    ),
    Row("api/v1/records", "GET", "/api/v1/records?agent={sre}", api(200, *AUDITORS)),
    Row(
        "api/v1/records/export",
        "GET",
        "/api/v1/records/export?format=jsonl&agent={sre}",
        api(200, *AUDITORS),
        writes=True,  # the export itself is a governance event
    ),
    Row(
        "api/v1/governance-events/export",
        "GET",
        "/api/v1/governance-events/export?format=csv&agent={sre}",
        api(200, *AUDITORS),
        writes=True,  # the export itself is a governance event
    ),
    Row(
        "api/v1/records/export/<uuid:export_id>/manifest",
        "GET",
        "/api/v1/records/export/{export}/manifest",
        api(200, *AUDITORS),
    ),
    # agents portal (admins) ---------------------------------------------------------------
    Row("agents/", "GET", "/agents/", page(200, *ADMIN)),
    Row("agents/", "POST", "/agents/", page(302, *ADMIN), {"slug": "new-agent"}, writes=True),
    Row(A, "GET", "/agents/{sre}/", page(200, *ADMIN)),
    Row(
        A + "mode/",
        "POST",
        "/agents/{sre}/mode/",
        page(302, *ADMIN),
        {"mode": "evaluate_only"},
        writes=True,
    ),
    Row(A + "settings/", "GET", "/agents/{sre}/settings/", page(200, *ADMIN)),
    Row(
        A + "settings/",
        "POST",
        "/agents/{sre}/settings/",
        page(302, *ADMIN),
        {"display_name": "SRE", "webhook_format": "json"},
        writes=True,
    ),
    Row(A + "hooks/new/", "GET", "/agents/{sre}/hooks/new/", page(200, *ADMIN)),
    Row(
        A + "hooks/new/",
        "POST",
        "/agents/{sre}/hooks/new/",
        page(302, *ADMIN),
        HOOK_FORM,
        writes=True,
    ),
    Row(H, "GET", "/agents/{sre}/hooks/{hook}/", page(200, *ADMIN)),
    Row(H + "overview/", "GET", "/agents/{sre}/hooks/{hook}/overview/", page(200, *ADMIN)),
    Row(H, "POST", "/agents/{sre}/hooks/{hook}/", page(302, *ADMIN), EDIT_FORM, writes=True),
    Row(
        H + "enabled/",
        "POST",
        "/agents/{sre}/hooks/{hook}/enabled/",
        page(302, *ADMIN),
        {"enabled": "0"},
        writes=True,
    ),
    Row(
        H + "move/",
        "POST",
        "/agents/{sre}/hooks/{hook}/move/",
        page(302, *ADMIN),
        {"direction": "down"},
        writes=True,
    ),
    Row(
        H + "delete/",
        "POST",
        "/agents/{sre}/hooks/{hook}/delete/",
        page(302, *ADMIN),
        {},
        writes=True,
    ),
    Row(A + "hooks/test", "GET", "/agents/{sre}/hooks/test?hook={hook}", page(200, *ADMIN)),
    # An incomplete hook: the admin gets the form errors (400) and nothing runs.
    Row(A + "hooks/test", "POST", "/agents/{sre}/hooks/test", page(400, *ADMIN), {"event": "Stop"}),
    Row(
        H + "samples/",
        "POST",
        "/agents/{sre}/hooks/{hook}/samples/",
        page(302, *ADMIN),
        {"sample_name": "rm", "expected": "block", "context": '{"tool_name": "Bash"}'},
        writes=True,
    ),
    Row(
        H + "samples/<int:pk>/delete/",
        "POST",
        "/agents/{sre}/hooks/{hook}/samples/{sample}/delete/",
        page(302, *ADMIN),
        {},
        writes=True,
    ),
    Row(
        A + "hooks/test/<str:token>",
        "GET",
        "/agents/{sre}/hooks/test/{hook_test_run}",
        page(202, *ADMIN),
    ),
    Row(A + "custom/", "GET", "/agents/{sre}/custom/", page(200, *ADMIN)),
    Row(
        A + "custom/",
        "POST",
        "/agents/{sre}/custom/",
        page(302, *ADMIN),
        {"name": "fresh"},
        writes=True,
    ),
    Row(
        A + "import/",
        "POST",
        "/agents/{sre}/import/",
        page(200, *ADMIN),
        {"text": _json(_document("imported", "hello"))},
        label="preview",
    ),
    Row(
        A + "import/",
        "POST",
        "/agents/{sre}/import/",
        page(302, *ADMIN),
        _confirm(_json(_document("imported", "hello")), custom_agent="imported"),
        writes=True,
        label="confirm",
    ),
    Row(C, "GET", "/agents/{sre}/custom/{custom}/", page(200, *ADMIN)),
    Row(C + "hooks/new/", "GET", "/agents/{sre}/custom/{custom}/hooks/new/", page(200, *ADMIN)),
    Row(
        C + "hooks/new/",
        "POST",
        "/agents/{sre}/custom/{custom}/hooks/new/",
        page(302, *ADMIN),
        HOOK_FORM,
        writes=True,
    ),
    Row(C + "settings/", "GET", "/agents/{sre}/custom/{custom}/settings/", page(200, *ADMIN)),
    Row(
        C + "settings/",
        "POST",
        "/agents/{sre}/custom/{custom}/settings/",
        page(302, *ADMIN),
        {"instructions": "new"},
        writes=True,
    ),
    Row(
        C + "delete/",
        "POST",
        "/agents/{sre}/custom/{custom}/delete/",
        page(302, *ADMIN),
        {},
        writes=True,
    ),
    Row(C + "yaml/", "GET", "/agents/{sre}/custom/{custom}/yaml/", page(200, *ADMIN)),
    Row(
        C + "yaml/",
        "POST",
        "/agents/{sre}/custom/{custom}/yaml/",
        page(200, *ADMIN),
        {"text": _json(_document("triage", "edited"))},
        label="preview",
    ),
    Row(
        C + "yaml/",
        "POST",
        "/agents/{sre}/custom/{custom}/yaml/",
        page(302, *ADMIN),
        _confirm(_json(_document("triage", "edited")), custom_agent=CUSTOM),
        writes=True,
        label="confirm",
    ),
    Row(C + "export/", "GET", "/agents/{sre}/custom/{custom}/export/", page(200, *ADMIN)),
    Row(C + "history/", "GET", "/agents/{sre}/custom/{custom}/history/", page(200, *ADMIN)),
    Row(A + "tokens/", "GET", "/agents/{sre}/tokens/", page(200, *ADMIN)),
    Row(
        A + "tokens/",
        "POST",
        "/agents/{sre}/tokens/",
        page(200, *ADMIN),
        {"name": "ci"},
        writes=True,
    ),
    Row(
        A + "tokens/<int:pk>/revoke/",
        "POST",
        "/agents/{sre}/tokens/{token}/revoke/",
        page(302, *ADMIN),
        {},
        writes=True,
    ),
    Row(A + "connect/", "GET", "/agents/{sre}/connect/?runtime=codex", page(200, *ADMIN)),
    Row(
        A + "connect/",
        "POST",
        "/agents/{sre}/connect/",
        page(200, *ADMIN),
        {"runtime": "claude-code", "name": "laptop"},
        writes=True,
    ),
    Row(A + "history/", "GET", "/agents/{sre}/history/", page(200, *ADMIN)),
    Row(A + "history/<int:number>/", "GET", "/agents/{sre}/history/{revision}/", page(200, *ADMIN)),
    Row(
        A + "history/<int:number>/rollback/",
        "POST",
        "/agents/{sre}/history/{revision}/rollback/",
        page(200, *ADMIN),
        {},
        label="preview",
    ),
    Row(
        A + "history/<int:number>/rollback/",
        "POST",
        "/agents/{sre}/history/{revision}/rollback/",
        page(302, *ADMIN),
        _confirm(None),
        writes=True,
        label="confirm",
    ),
    # approvals pages (reviewers) ----------------------------------------------------------
    Row("approvals/", "GET", "/approvals/", page(200, *REVIEWERS)),
    Row("approvals/history/", "GET", "/approvals/history/", page(200, *REVIEWERS)),
    Row(
        "approvals/bulk/",
        "POST",
        "/approvals/bulk/",
        page(302, *REVIEWERS),
        lambda w: {"outcome": "approve", "ids": [str(w.escalation.pk)], "confirmed": "1"},
        writes=True,
        no_write=frozenset({"rev_other"}),
    ),
    Row(
        "approvals/<uuid:pk>/",
        "GET",
        "/approvals/{escalation}/",
        page(200, "admin", "rev", rev_other=404),
    ),
    Row(
        "approvals/<uuid:pk>/decision/",
        "POST",
        "/approvals/{escalation}/decision/",
        page(302, "admin", "rev", rev_other=404),
        {"outcome": "approve", "reason": "fine"},
        writes=True,
    ),
    Row(
        "approvals/link/<str:token>/",
        "GET",
        "/approvals/link/{link}/",
        page(200, "admin", "rev", rev_other=404),
    ),
    Row(
        "approvals/link/<str:token>/",
        "POST",
        "/approvals/link/{link}/",
        page(302, "admin", "rev", rev_other=404),
        {"outcome": "approve"},
        writes=True,
    ),
    # audit pages (auditors) ---------------------------------------------------------------
    Row("audit/", "GET", "/audit/?agent={sre}", page(200, *AUDITORS)),
    Row("audit/records/<int:pk>/", "GET", "/audit/records/{record}/", page(200, *AUDITORS)),
    Row("audit/sessions/", "GET", "/audit/sessions/", page(200, *AUDITORS)),
    Row(
        "audit/sessions/<anytext:session_id>/",
        "GET",
        "/audit/sessions/{session}/?agent={sre}",
        page(200, *AUDITORS),
    ),
    Row("audit/events/", "GET", "/audit/events/", page(200, *AUDITORS)),
    Row("audit/dashboard/", "GET", "/audit/dashboard/", page(200, *AUDITORS)),
    Row(
        "audit/suggest/<str:field>/",
        "GET",
        "/audit/suggest/tool/?tool_prefix=b",
        page(200, *AUDITORS),
    ),
    # Saved views are per user: the auditor's own view is a 404 for anyone else.
    Row(
        "audit/views/",
        "POST",
        "/audit/views/",
        page(302, *AUDITORS),
        {"name": "matrix view", "query": "outcome=denied"},
        writes=True,
    ),
    Row(
        "audit/views/<int:pk>/delete/",
        "POST",
        "/audit/views/{saved_view}/delete/",
        page(302, *AUDITORS, admin=404),
        writes=True,
    ),
    # user pages (admins); the target is the no-role person ----------------------------------
    Row("users/", "GET", "/users/", page(200, *ADMIN)),
    Row("users/new/", "GET", "/users/new/", page(200, *ADMIN)),
    Row(
        "users/new/",
        "POST",
        "/users/new/",
        page(200, *ADMIN),
        {"username": "newcomer", "roles": ["auditor"]},
        writes=True,
    ),
    Row(U, "GET", "/users/{person}/", page(200, *ADMIN)),
    Row(U, "POST", "/users/{person}/", page(302, *ADMIN), {"roles": ["auditor"]}, writes=True),
    Row(U + "invitation/", "POST", "/users/{person}/invitation/", page(200, *ADMIN), writes=True),
    Row(U + "deactivate/", "GET", "/users/{person}/deactivate/", page(200, *ADMIN)),
    Row(U + "deactivate/", "POST", "/users/{person}/deactivate/", page(302, *ADMIN), writes=True),
    Row(U + "reactivate/", "POST", "/users/{inactive}/reactivate/", page(302, *ADMIN), writes=True),
    Row(
        U + "slack/",
        "POST",
        "/users/{person}/slack/",
        page(302, *ADMIN),
        {"slack_user_id": "U0MATRIX02"},
        writes=True,
    ),
    Row(
        U + "tokens/",
        "POST",
        "/users/{person}/tokens/",
        page(200, *ADMIN),
        {"name": "ci"},
        writes=True,
    ),
    Row(
        U + "tokens/<int:token_pk>/revoke/",
        "POST",
        "/users/{person}/tokens/{person_token}/revoke/",
        page(302, *ADMIN),
        writes=True,
    ),
    Row("audit/verify/", "GET", "/audit/verify/", page(200, *AUDITORS)),
    Row(
        "audit/verify/",
        "POST",
        "/audit/verify/",
        page(302, *AUDITORS),
        lambda world: {"agent": world.sre.slug},
        writes=True,
    ),
    Row(
        "audit/verify/<uuid:pk>/",
        "GET",
        "/audit/verify/{verification}/",
        page(200, *AUDITORS),
    ),
]
