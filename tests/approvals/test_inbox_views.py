"""The reviewer pages: /approvals/ (inbox), decisions from it, bulk decisions, /approvals/history/."""

from __future__ import annotations

import re
from datetime import timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents import services as agent_services
from approvals import services
from approvals.models import Escalation, EscalationStatus
from tests.approvals.conftest import TOOL_SCHEMA, approval_hook

HTMX = {"HTTP_HX_REQUEST": "true"}


def test_inbox_lists_pending_items_with_everything_a_reviewer_needs(reviewer_client, sre, escalate):
    agent_services.custom_agent_create(actor=None, agent=sre.agent, name="my_hooked_agent")
    escalate(
        "restart_service",
        {"service": "payments"},
        custom_agent="my_hooked_agent",
        session_id="sess-42",
        turn=3,
        transcript="user: please restart payments",
    )
    page = reviewer_client.get("/approvals/")
    html = page.content.decode()
    assert page.status_code == 200
    for fact in (
        "sre-agent",
        "my_hooked_agent",
        "restart_service",
        "&quot;payments&quot;",
        "approval_required",
        "sess-42",
        "turn 3",
        "please restart payments",
        'class="countdown"',
        "Keyboard shortcuts",
        'ws-connect="/ws/approvals/?view=inbox&amp;sort=expires"',
    ):
        assert fact in html, fact


def test_inbox_shows_the_runtime_session_and_working_directory(reviewer_client, sre, escalate):
    approval_hook(sre, matcher="Bash")
    escalate(
        "Bash",
        {"command": "npm test"},
        framework="claude-code",
        session_id="9f1c2d7e-4b7a",
        cwd="/home/dev/project",
    )
    html = reviewer_client.get("/approvals/").content.decode()
    for fact in ("claude-code", "9f1c2d7e-4b7a", "/home/dev/project"):
        assert fact in html, fact


def test_auditors_outsiders_and_anonymous_cannot_open_the_inbox(
    auditor_client, outsider_client, client
):
    assert auditor_client.get("/approvals/").status_code == 403
    assert outsider_client.get("/approvals/").status_code == 403
    assert client.get("/approvals/").status_code == 302
    assert auditor_client.get("/approvals/history/").status_code == 403


def test_nav_counter_shows_pending_count_for_reviewers(reviewer_client, auditor_client, escalate):
    escalate()
    escalate("scale_deployment")
    html = reviewer_client.get("/approvals/history/").content.decode()
    assert re.search(r'<span id="nav-pending-count" class="count" [^>]*>2</span>', html)
    assert "<title>(2) Approval history" in html
    assert 'ws-connect="/ws/approvals/?view=nav"' in html
    assert (
        "nav-pending-count" not in auditor_client.get("/accounts/password_change/").content.decode()
    )


def test_inbox_query_count_does_not_grow_with_rows(reviewer_client, escalate):
    escalate()
    with CaptureQueriesContext(connection) as few:
        reviewer_client.get("/approvals/")
    for n in range(5):
        escalate("restart_service", {"service": f"s{n}"})
    with CaptureQueriesContext(connection) as many:
        reviewer_client.get("/approvals/")
    assert len(many) == len(few)


def test_htmx_approve_removes_the_row_and_flashes(reviewer_client, escalate):
    escalation = escalate()
    response = reviewer_client.post(
        f"/approvals/{escalation.pk}/decision/", {"outcome": "approve"}, **HTMX
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert f'id="esc-{escalation.pk}"' not in html  # empty main content: the row goes
    assert html.startswith("<template>") and 'id="flash"' in html and "approved" in html
    escalation.refresh_from_db()
    assert escalation.status == EscalationStatus.APPROVED


def test_reject_without_reason_re_renders_the_row_with_the_error(reviewer_client, escalate):
    escalation = escalate()
    response = reviewer_client.post(
        f"/approvals/{escalation.pk}/decision/", {"outcome": "reject", "reason": ""}, **HTMX
    )
    html = response.content.decode()
    assert html.startswith(f'<tr id="esc-{escalation.pk}"')
    assert "/reason" in html and "errorlist" in html
    escalation.refresh_from_db()
    assert escalation.status == EscalationStatus.PENDING


def test_edit_then_approve_from_the_form(reviewer_client, escalate):
    escalation = escalate(tool_schema=TOOL_SCHEMA)
    bad = reviewer_client.post(
        f"/approvals/{escalation.pk}/decision/",
        {"outcome": "approve", "args": '{"service": "api", "replicas": 50}'},
        **HTMX,
    )
    assert "/args/replicas" in bad.content.decode()
    not_json = reviewer_client.post(
        f"/approvals/{escalation.pk}/decision/", {"outcome": "approve", "args": "{oops"}, **HTMX
    )
    assert "Not valid JSON" in not_json.content.decode()
    reviewer_client.post(
        f"/approvals/{escalation.pk}/decision/",
        {"outcome": "approve", "args": '{"service": "api", "replicas": 2}'},
        **HTMX,
    )
    escalation.refresh_from_db()
    assert escalation.status == EscalationStatus.APPROVED
    assert escalation.approved_arguments == {"service": "api", "replicas": 2}


def test_plain_form_post_redirects_back_with_a_message(reviewer_client, escalate):
    escalation = escalate()
    response = reviewer_client.post(
        f"/approvals/{escalation.pk}/decision/", {"outcome": "reject", "reason": "nope"}
    )
    assert response.status_code == 302 and response["Location"] == "/approvals/"
    follow = reviewer_client.get("/approvals/").content.decode()
    assert "rejected" in follow


def test_deciding_twice_in_the_ui_reports_the_conflict(reviewer_client, admin_client, escalate):
    escalation = escalate()
    admin_client.post(f"/approvals/{escalation.pk}/decision/", {"outcome": "approve"}, **HTMX)
    html = reviewer_client.post(
        f"/approvals/{escalation.pk}/decision/", {"outcome": "approve"}, **HTMX
    ).content.decode()
    assert "already approved" in html and "msg-error" in html


def test_auditor_cannot_decide_from_the_ui(auditor_client, escalate):
    escalation = escalate()
    response = auditor_client.post(f"/approvals/{escalation.pk}/decision/", {"outcome": "approve"})
    assert response.status_code == 403


def test_restricted_reviewer_gets_404_for_other_agents(
    reviewer_client, rita, alice, other, escalate
):
    services.reviewer_scope_set(actor=alice, user=rita, agents=[other.agent])
    escalation = escalate()
    response = reviewer_client.post(f"/approvals/{escalation.pk}/decision/", {"outcome": "approve"})
    assert response.status_code == 404
    assert "restart_service" not in reviewer_client.get("/approvals/").content.decode()


def test_bulk_approve_and_reject(reviewer_client, escalate):
    first, second, third = (
        escalate(),
        escalate("scale_deployment"),
        escalate("restart_service", {"service": "x"}),
    )
    response = reviewer_client.post(
        "/approvals/bulk/", {"outcome": "approve", "ids": [first.pk, second.pk]}, **HTMX
    )
    html = response.content.decode()
    assert "2 approved." in html and f'id="esc-{third.pk}"' in html
    assert f'id="esc-{first.pk}"' not in html
    refused = reviewer_client.post(
        "/approvals/bulk/", {"outcome": "reject", "ids": [third.pk]}, **HTMX
    )
    assert "needs a reason" in refused.content.decode()
    reviewer_client.post(
        "/approvals/bulk/", {"outcome": "reject", "reason": "batch no", "ids": [third.pk]}, **HTMX
    )
    for escalation, status in ((first, "approved"), (second, "approved"), (third, "rejected")):
        escalation.refresh_from_db()
        assert escalation.status == status


def test_history_filters_by_status_agent_reviewer_and_date(
    reviewer_client, rita, alice, escalate, other
):
    approved = escalate()
    rejected = escalate("scale_deployment")
    escalate(agent=other)
    services.escalation_decide(escalation=approved, actor=rita, outcome="approve")
    services.escalation_decide(escalation=rejected, actor=alice, outcome="reject", reason="no")

    html = reviewer_client.get("/approvals/history/?status=rejected").content.decode()
    assert "scale_deployment" in html and "Approved" not in html.split("<tbody>")[1]
    html = reviewer_client.get("/approvals/history/?reviewer=rita").content.decode()
    body = html.split("<tbody>")[1]
    assert "Approved" in body and "Rejected" not in body
    html = reviewer_client.get("/approvals/history/?agent=other-agent").content.decode()
    body = html.split("<tbody>")[1]
    assert "other-agent" in body and "sre-agent" not in body
    today = approved.created_at.date().isoformat()
    body = (
        reviewer_client.get(f"/approvals/history/?since={today}&until={today}")
        .content.decode()
        .split("<tbody>")[1]
    )
    assert body.count("<tr>") == 3
    body = (
        reviewer_client.get("/approvals/history/?until=2000-01-01")
        .content.decode()
        .split("<tbody>")[1]
    )
    assert "No escalations match" in body


def test_pages_and_rows_with_tool_arguments_are_never_cached(reviewer_client, escalate):
    escalation = escalate("restart_service", {"service": "secret-db"})
    for response in (
        reviewer_client.get("/approvals/"),
        reviewer_client.get("/approvals/history/"),
        reviewer_client.post(
            f"/approvals/{escalation.pk}/decision/", {"outcome": "reject"}, **HTMX
        ),
    ):
        assert response.status_code == 200
        assert "no-store" in response["Cache-Control"]


def _row_ids(html: str) -> list[str]:
    return re.findall(r'<tr id="esc-([0-9a-f-]+)"', html)


def _expire_minutes_after(start, expiries) -> None:
    for escalation, minutes in expiries:
        Escalation.objects.filter(pk=escalation.pk).update(
            expires_at=start + timedelta(minutes=minutes)
        )


def test_the_queue_lists_the_soonest_expiry_first_unless_asked_for_newest(
    reviewer_client, escalate
):
    later, sooner, middle = escalate(), escalate("scale_deployment"), escalate()
    _expire_minutes_after(later.created_at, ((later, 50), (sooner, 5), (middle, 20)))
    html = reviewer_client.get("/approvals/").content.decode()
    assert _row_ids(html) == [str(sooner.pk), str(middle.pk), str(later.pk)]
    assert 'data-sort="expires"' in html and 'href="?sort=expires" aria-current="true"' in html
    newest = reviewer_client.get("/approvals/?sort=newest").content.decode()
    assert _row_ids(newest) == [str(middle.pk), str(sooner.pk), str(later.pk)]
    assert 'data-sort="newest"' in newest
    unknown = reviewer_client.get("/approvals/?sort=bogus").content.decode()
    assert _row_ids(unknown) == _row_ids(html)


def test_rows_past_their_expiry_are_never_counted_even_before_the_sweep(reviewer_client, escalate):
    open_one, overdue = escalate(), escalate("scale_deployment")
    Escalation.objects.filter(pk=overdue.pk).update(
        expires_at=overdue.created_at - timedelta(seconds=1)
    )
    assert Escalation.objects.get(pk=overdue.pk).status == EscalationStatus.PENDING
    for url in ("/approvals/", "/approvals/history/"):
        html = reviewer_client.get(url).content.decode()
        counter = re.search(r'<span id="nav-pending-count"[^>]*>[^<]*</span>', html)
        assert counter is not None
        assert 'data-count="1"' in counter.group(0) and counter.group(0).endswith(">1</span>")
        assert html.count("data-expiries=") == 1
        assert "<title>(1) " in html
    assert _row_ids(reviewer_client.get("/approvals/").content.decode()) == [str(open_one.pk)]


def test_the_counter_carries_each_open_rows_expiry_for_the_page(reviewer_client, escalate):
    first, second = escalate(), escalate("scale_deployment")
    html = reviewer_client.get("/approvals/history/").content.decode()
    expiries = re.search(r'data-expiries="([0-9 ]*)"', html).group(1).split()
    wanted = sorted(int(e.expires_at.timestamp() * 1000) for e in (first, second))
    assert [int(ms) for ms in expiries] == wanted
    server_now = int(re.search(r'data-now="([0-9]+)"', html).group(1))
    assert abs(server_now - first.created_at.timestamp() * 1000) < 60_000


def test_queue_rows_and_history_rows_link_to_the_escalation_page(reviewer_client, rita, escalate):
    pending, decided = escalate(), escalate("scale_deployment")
    services.escalation_decide(escalation=decided, actor=rita, outcome="approve")
    inbox = reviewer_client.get("/approvals/").content.decode()
    assert f'href="/approvals/{pending.pk}/"' in inbox
    history = reviewer_client.get("/approvals/history/").content.decode()
    assert f'href="/approvals/{pending.pk}/"' in history
    assert f'href="/approvals/{decided.pk}/"' in history


def test_approve_forms_are_held_for_undo_by_the_script_and_post_plainly_without_it(
    reviewer_client, escalate
):
    escalate()
    html = reviewer_client.get("/approvals/").content.decode()
    # The script holds these for five seconds; the forms themselves are ordinary posts.
    assert html.count('data-hold="approve"') == 2  # Approve, Approve with these arguments
    assert 'data-hold="bulk"' in html
    assert re.search(
        r'<form class="approve-form" method="post" action="/approvals/[^"]+/decision/"', html
    )


def test_a_plain_bulk_post_first_states_how_many_and_which(reviewer_client, escalate, other):
    first, second = escalate(), escalate("scale_deployment")
    foreign = escalate(agent=other)
    ids = [str(first.pk), str(second.pk), "not-a-uuid"]
    page = reviewer_client.post("/approvals/bulk/", {"outcome": "approve", "ids": ids})
    html = page.content.decode()
    assert page.status_code == 200
    assert "Approve 2 escalations?" in html
    assert "restart_service" in html and "scale_deployment" in html
    assert "1 of the selected is no longer waiting for you" in html
    assert "Approve these 2" in html and 'name="confirmed" value="1"' in html
    assert str(foreign.pk) not in html
    for escalation in (first, second):
        escalation.refresh_from_db()
        assert escalation.status == EscalationStatus.PENDING

    done = reviewer_client.post(
        "/approvals/bulk/",
        {"outcome": "approve", "ids": [str(first.pk), str(second.pk)], "confirmed": "1"},
    )
    assert done.status_code == 302
    for escalation in (first, second):
        escalation.refresh_from_db()
        assert escalation.status == EscalationStatus.APPROVED


def test_a_plain_bulk_reject_without_reason_or_outcome_is_refused_before_confirming(
    reviewer_client, escalate
):
    escalation = escalate()
    for data in ({"outcome": "reject", "ids": [escalation.pk]}, {"ids": [escalation.pk]}):
        response = reviewer_client.post("/approvals/bulk/", data)
        assert response.status_code == 302
    messages = reviewer_client.get("/approvals/").content.decode()
    assert "needs a reason" in messages or "Choose approve or reject" in messages
    escalation.refresh_from_db()
    assert escalation.status == EscalationStatus.PENDING


def test_a_long_queue_shows_the_first_rows_in_its_order_and_says_how_many_more(
    reviewer_client, escalate, settings
):
    settings.CONSOLE_INBOX_ROWS = 2
    first, second, third = escalate(), escalate("scale_deployment"), escalate()
    _expire_minutes_after(first.created_at, ((first, 50), (second, 5), (third, 20)))
    html = reviewer_client.get("/approvals/").content.decode()
    assert _row_ids(html) == [str(second.pk), str(third.pk)]
    note = re.search(r'<p id="pending-more"[^>]*>(.*?)</p>', html, re.S)
    assert note and 'data-cap="2"' in note.group(0) and " hidden" not in note.group(0)
    assert re.sub(r"\s+", " ", re.sub("<[^>]+>", "", note.group(1))).strip() == (
        "Showing the first 2 of 3 open escalations, in this order. "
        "The next come in as these are decided."
    )
    newest = reviewer_client.get("/approvals/?sort=newest").content.decode()
    assert _row_ids(newest) == [str(third.pk), str(second.pk)]
    assert 'ws-connect="/ws/approvals/?view=inbox&amp;sort=newest"' in newest
    assert '<input type="hidden" name="sort" value="newest">' in newest
    # A bulk decision's rows come back capped, in the page's order: the hidden row comes in.
    response = reviewer_client.post(
        "/approvals/bulk/",
        {"outcome": "approve", "ids": [third.pk], "sort": "newest"},
        **HTMX,
    )
    assert _row_ids(response.content.decode()) == [str(second.pk), str(first.pk)]


def test_a_queue_within_the_cap_hides_the_note_and_costs_no_count_query(
    reviewer_client, escalate, settings
):
    settings.CONSOLE_INBOX_ROWS = 2
    escalate()
    escalate("scale_deployment")
    with CaptureQueriesContext(connection) as within:
        html = reviewer_client.get("/approvals/").content.decode()
    assert re.search(r'<p id="pending-more"[^>]* hidden>', html)
    escalate()
    with CaptureQueriesContext(connection) as beyond:
        html = reviewer_client.get("/approvals/").content.decode()
    assert not re.search(r'<p id="pending-more"[^>]* hidden>', html)
    assert len(beyond) == len(within) + 1  # the COUNT, only past the cap
