"""Real Chromium against a real daphne server, as a reviewer works the inbox: the queue sorted
by time left (live arrivals take their place, highlighted; a row decided elsewhere says who
before it leaves; the nav count and tab title drop a row the moment it expires), the undo
window of approvals (nothing is sent inside it), opt-in browser notifications, the escalation
page with edited arguments, what a reviewer was doing kept when rows are re-rendered, and the
compact phone card.

Screenshots go to $SHOTS_DIR when it is set (the inbox and the escalation page at 1440 and
390 px wide)."""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import httpx
import pytest
from django.utils import timezone
from playwright.sync_api import expect, sync_playwright

from approvals import services
from approvals.models import Escalation, EscalationStatus
from tests.approvals.conftest import (
    TOOL_SCHEMA,
    approval_hook,
    approval_request,
    ensure_approval_hook,
    in_own_thread,
)
from tests.approvals.live_server import daphne_server
from tests.browser.chromium import launch_chromium, log_in

pytestmark = [
    pytest.mark.browser,
    pytest.mark.timeout(240),
    pytest.mark.django_db(transaction=True),
]

# Records each `new Notification(...)` and still calls the real constructor.
RECORD_NOTIFICATIONS = """
(() => {
  const Real = window.Notification;
  window.__notifications = [];
  function Recording(title, options) {
    window.__notifications.push({title: title, body: (options || {}).body || "", tag: (options || {}).tag || ""});
    return new Real(title, options);
  }
  Object.defineProperty(Recording, "permission", {get: () => Real.permission});
  Recording.requestPermission = (...args) => Real.requestPermission(...args);
  Recording.prototype = Real.prototype;
  window.Notification = Recording;
})();
"""


def in_thread(function: Callable[[], Any]) -> Any:
    """Database work from a thread with its own connection: Playwright's sync API runs an
    event loop in this one."""
    result: list[Any] = []
    worker = threading.Thread(target=in_own_thread(lambda: result.append(function())))
    worker.start()
    worker.join()
    assert result, "the database call failed"
    return result[0]


def status_of(pk: str) -> str:
    return in_thread(lambda: Escalation.objects.get(pk=pk).status)


def shot(page: Any, name: str) -> None:
    folder = os.environ.get("SHOTS_DIR")
    if folder:
        os.makedirs(folder, exist_ok=True)
        page.screenshot(path=os.path.join(folder, name), full_page=True)


class Agent:
    def __init__(self, base: str, token: str) -> None:
        self.http = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"})

    def escalate(self, tool: str = "restart_service", args: Any = None, **meta: Any) -> str:
        body = {"request": approval_request(tool, args), "meta": meta}
        response = self.http.post("/api/v1/escalations", json=body)
        assert response.status_code == 201, response.text
        return str(response.json()["id"])


def expire_in(pk: str, seconds: float) -> None:
    when = timezone.now() + timedelta(seconds=seconds)
    in_thread(lambda: Escalation.objects.filter(pk=pk).update(expires_at=when))


def row_ids(page: Any) -> list[str]:
    ids = page.eval_on_selector_all(
        "#pending-rows tr.esc:not(.departed)", "rows => rows.map(r => r.dataset.id)"
    )
    return list(ids)


def test_the_queue_is_sorted_by_time_left_and_says_what_happens_to_rows(rita, alice, sre):
    ensure_approval_hook(sre)  # expiresIn 600 s by default
    with daphne_server() as base, sync_playwright() as playwright:
        agent = Agent(base, sre.token)
        soon = agent.escalate("restart_service", {"service": "soon"})
        late = agent.escalate("scale_deployment", {"service": "late", "replicas": 2})
        overdue = agent.escalate("restart_service", {"service": "overdue"})
        expire_in(soon, 120)
        expire_in(late, 3600)
        expire_in(overdue, 8)  # expires while the page is open; no sweep runs here

        browser = launch_chromium(playwright)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.set_default_timeout(15_000)
        log_in(page, base, "rita")
        page.goto(f"{base}/approvals/")
        expect(page.locator("#live-state")).to_have_text("live")
        assert row_ids(page) == [overdue, soon, late]
        expect(page.locator("#nav-pending-count")).to_have_text("3")
        assert page.title().startswith("(3) Approvals")

        # It expires: the count and the title drop at once, before any sweep.
        # Up to 8 s after it was set; expect()'s own timeout (5 s) is shorter than that.
        expect(page.locator(f"#esc-{overdue}")).to_have_class(
            re.compile(r"\bexpired\b"), timeout=15_000
        )
        expect(page.locator("#nav-pending-count")).to_have_text("2")
        expect(page).to_have_title(re.compile(r"^\(2\) Approvals"))
        assert status_of(overdue) == EscalationStatus.PENDING

        # A live arrival (600 s) takes its place between 120 s and 3600 s, highlighted.
        arrived = agent.escalate("restart_service", {"service": "new"})
        row = page.locator(f"#esc-{arrived}")
        expect(row).to_have_class(re.compile(r"\barrived\b"))
        expect(row.locator(".new-badge")).to_be_visible()
        assert row_ids(page) == [overdue, soon, arrived, late]
        expect(page.locator("#nav-pending-count")).to_have_text("3")
        expect(page).to_have_title(re.compile(r"^\(3\) Approvals"))
        shot(page, "inbox-1440.png")

        # Newest first, on request.
        page.get_by_role("link", name="Newest").click()
        expect(page.locator("#pending-rows")).to_have_attribute("data-sort", "newest")
        assert row_ids(page) == [arrived, late, soon]

        # Decided by someone else: the row says so, then leaves.
        in_thread(
            lambda: services.escalation_decide(
                escalation=Escalation.objects.get(pk=late), actor=alice, outcome="approve"
            )
        )
        departed = page.locator(f"#esc-{late}")
        expect(departed).to_contain_text("Approved by alice")
        expect(departed).to_have_class(re.compile(r"\bdeparted\b"))
        expect(departed.locator("input.pick")).to_be_disabled()
        expect(departed).to_have_count(0, timeout=8_000)
        expect(page.locator("#nav-pending-count")).to_have_text("2")
        browser.close()
        agent.http.close()


def test_an_approval_is_held_for_five_seconds_and_undo_sends_nothing(rita, sre):
    ensure_approval_hook(sre)
    with daphne_server() as base, sync_playwright() as playwright:
        agent = Agent(base, sre.token)
        first = agent.escalate("restart_service", {"service": "api"})
        browser = launch_chromium(playwright)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(15_000)
        sent: list[tuple[float, str]] = []
        page.on(
            "request",
            lambda request: (
                sent.append((time.monotonic(), request.url))
                if request.method == "POST" and "/approvals/" in request.url
                else None
            ),
        )
        log_in(page, base, "rita")
        page.goto(f"{base}/approvals/")
        expect(page.locator("#live-state")).to_have_text("live")
        row = page.locator(f"#esc-{first}")

        # The button: held, with a countdown and Undo; nothing sent, nothing committed.
        row.get_by_role("button", name="Approve").click()
        bar = row.locator(".undo-bar")
        expect(bar).to_contain_text("Approving restart_service in")
        expect(row.locator(".approve-button")).to_be_hidden()
        shot(page, "inbox-undo-1280.png")
        time.sleep(1.5)
        assert status_of(first) == EscalationStatus.PENDING and sent == []
        bar.get_by_role("button", name="Undo").click()
        expect(bar).to_have_count(0)
        expect(row.locator(".approve-button")).to_be_visible()
        expect(page.locator("#flash")).to_contain_text("was not sent")
        time.sleep(5.5)
        assert status_of(first) == EscalationStatus.PENDING and sent == []

        # The `a` key: the same hold; after five seconds it is sent and committed.
        page.keyboard.press("j")
        started = time.monotonic()
        page.keyboard.press("a")
        expect(bar).to_contain_text("Approving restart_service in")
        time.sleep(1)
        assert status_of(first) == EscalationStatus.PENDING and sent == []
        expect(row).to_have_count(0, timeout=10_000)
        assert status_of(first) == EscalationStatus.APPROVED
        assert len(sent) == 1 and sent[0][0] - started >= 4.5
        expect(page.locator("#flash")).to_contain_text("restart_service: approved")

        # "Approve selected": the bar states how many and which before anything is sent.
        second = agent.escalate("restart_service", {"service": "b"})
        third = agent.escalate("scale_deployment", {"service": "c", "replicas": 1})
        for pk in (second, third):
            page.locator(f"#esc-{pk} input.pick").check()
        expect(page.locator("#selected-count")).to_have_text("2")
        expect(page.locator("#selected-tools")).to_contain_text("restart_service (sre-agent)")
        page.get_by_role("button", name="Approve 2 selected").click()
        bulk_bar = page.locator("#bulk-form + .undo-bar")
        expect(bulk_bar).to_contain_text("Approving 2: ")
        expect(bulk_bar).to_contain_text("restart_service (sre-agent)")
        expect(bulk_bar).to_contain_text("scale_deployment (sre-agent)")
        time.sleep(1)
        assert [status_of(pk) for pk in (second, third)] == ["pending", "pending"]
        assert len(sent) == 1
        expect(page.locator("#flash")).to_contain_text("2 approved.", timeout=10_000)
        assert [status_of(pk) for pk in (second, third)] == ["approved", "approved"]
        browser.close()
        agent.http.close()


def test_a_granted_notification_permission_shows_new_escalations(rita, alice, sre, other):
    ensure_approval_hook(sre)
    ensure_approval_hook(other)
    services.reviewer_scope_set(actor=alice, user=rita, agents=[sre.agent])
    with daphne_server() as base, sync_playwright() as playwright:
        agent = Agent(base, sre.token)
        outside = Agent(base, other.token)
        browser = launch_chromium(playwright)
        context = browser.new_context(
            permissions=["notifications"], viewport={"width": 1280, "height": 900}
        )
        context.add_init_script(RECORD_NOTIFICATIONS)
        page = context.new_page()
        page.set_default_timeout(15_000)
        log_in(page, base, "rita")
        existing = agent.escalate("scale_deployment", {"service": "old", "replicas": 1})
        page.goto(f"{base}/approvals/")
        expect(page.locator("#live-state")).to_have_text("live")
        expect(page.locator(f"#esc-{existing}")).to_be_visible()

        # Nothing until the reviewer opts in.
        toggle = page.locator("#notify-toggle")
        expect(toggle).to_have_text("Turn on notifications")
        quiet = agent.escalate("restart_service", {"service": "quiet"})
        expect(page.locator(f"#esc-{quiet}")).to_be_visible()
        assert page.evaluate("window.__notifications") == []

        toggle.click()
        expect(toggle).to_have_text("Notifications on")
        expect(toggle).to_have_attribute("aria-pressed", "true")
        created = agent.escalate("restart_service", {"service": "payments"})
        expect(page.locator(f"#esc-{created}")).to_be_visible()
        page.wait_for_function("window.__notifications.length === 1")
        [note] = page.evaluate("window.__notifications")
        assert note["title"] == "Approval needed: restart_service"
        assert note["body"].startswith("sre-agent")
        assert note["tag"] == f"escalation-{created}"

        # Not for escalations outside the reviewer's scope, nor for rows decided elsewhere.
        outside.escalate("restart_service", {"service": "not-rita's"})
        in_thread(
            lambda: services.escalation_decide(
                escalation=Escalation.objects.get(pk=existing), actor=alice, outcome="approve"
            )
        )
        expect(page.locator(f"#esc-{existing}")).to_have_count(0, timeout=8_000)
        assert len(page.evaluate("window.__notifications")) == 1
        assert "not-rita" not in page.content()
        browser.close()
        agent.http.close()
        outside.http.close()


def test_the_escalation_page_shows_edited_arguments_and_the_conversation(rita, alice, sre):
    approval_hook(sre, approvalsRequired=2)
    transcript = "\n".join(
        [
            '{"ts": "2026-01-02T03:04:05.000+00:00", "role": "user", "content": "Scale web for the sale."}',
            '{"ts": "2026-01-02T03:04:06.000+00:00", "role": "assistant", "content": "{\\"tool_call\\": \\"scale_deployment\\", \\"args\\": {\\"service\\": \\"web\\", \\"replicas\\": 8}}", "tool_name": "scale_deployment", "call_id": "c1"}',
        ]
    )
    with daphne_server() as base, sync_playwright() as playwright:
        agent = Agent(base, sre.token)
        pk = agent.escalate(
            "scale_deployment",
            {"service": "web", "replicas": 8},
            tool_schema=TOOL_SCHEMA,
            transcript=transcript,
            session_id="sess-sale",
        )
        earlier = agent.escalate("scale_deployment", {"service": "web", "replicas": 5})
        in_thread(
            lambda: services.escalation_decide(
                escalation=Escalation.objects.get(pk=earlier),
                actor=alice,
                outcome="reject",
                reason="too many",
            )
        )
        browser = launch_chromium(playwright)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.set_default_timeout(15_000)
        log_in(page, base, "rita")
        page.goto(f"{base}/approvals/")
        row = page.locator(f"#esc-{pk}")
        row.locator("details.edit summary").click()
        row.locator("textarea.args-edit").fill('{"service": "web", "replicas": 3}')
        row.get_by_role("button", name="Approve with these arguments").click()
        expect(row.locator(".undo-bar")).to_contain_text("with edited arguments")
        expect(page.locator("#flash")).to_contain_text(
            "your approval counted (1/2)", timeout=10_000
        )
        assert status_of(pk) == EscalationStatus.PENDING

        # From the queue to the page: the edit as a diff, the transcript as a conversation.
        page.locator(f"#esc-{pk} a.tool-link").click()
        page.wait_for_url(f"{base}/approvals/{pk}/")
        diff = page.locator("table.diff tbody tr")
        expect(diff).to_have_count(1)
        expect(diff.first).to_contain_text("/replicas")
        expect(diff.first.locator("td.before")).to_have_text("8")
        expect(diff.first.locator("td.after")).to_have_text("3")
        conversation = page.locator("ol.conversation")
        expect(conversation.locator("li")).to_have_count(2)
        expect(conversation.locator("li").first).to_contain_text("Scale web for the sale.")
        expect(conversation.locator("li").nth(1)).to_contain_text(
            "assistant calls scale_deployment"
        )
        expect(page.locator(".votes")).to_contain_text("rita")
        expect(page.locator("#h-recent + .table-wrap")).to_contain_text("too many")
        expect(page.locator(".decision-box")).to_contain_text("You voted approve")
        shot(page, "detail-1440.png")
        page.set_viewport_size({"width": 390, "height": 844})
        shot(page, "detail-390.png")

        # Alice approves the edited call from the page: held, then sent; the page comes back.
        page.set_viewport_size({"width": 1440, "height": 900})
        log_in(page, base, "alice")
        page.goto(f"{base}/approvals/{pk}/")
        page.locator(".decision-box").get_by_role("button", name="Approve edited").click()
        expect(page.locator(".decision-box .undo-bar")).to_contain_text("Approving")
        assert status_of(pk) == EscalationStatus.PENDING
        expect(page.locator(".decision-box")).to_contain_text(
            "Approved by alice with edited arguments", timeout=10_000
        )
        assert status_of(pk) == EscalationStatus.APPROVED

        # History rows open the same page.
        page.goto(f"{base}/approvals/history/")
        page.locator(f"a[href='/approvals/{earlier}/']").click()
        page.wait_for_url(f"{base}/approvals/{earlier}/")
        expect(page.locator(".decision-box")).to_contain_text("Rejected by alice")
        browser.close()
        agent.http.close()


# Keeps the ws extension's socket wrapper, so a test can make the page reconnect.
KEEP_SOCKET = """
document.addEventListener("htmx:wsOpen", (event) => { window.__socket = event.detail.socketWrapper; });
"""


def test_what_a_reviewer_was_doing_survives_a_vote_elsewhere_and_a_reconnect(rita, alice, sre):
    """Another reviewer's vote re-renders the row and a reconnect's re-sync re-renders every
    row: the open editor, the typed arguments and reason, the ticked box and the focus stay."""
    approval_hook(sre, approvalsRequired=2)
    edited = '{"service": "web", "replicas": 3}'
    with daphne_server() as base, sync_playwright() as playwright:
        agent = Agent(base, sre.token)
        pk = agent.escalate("scale_deployment", {"service": "web", "replicas": 8})
        browser = launch_chromium(playwright)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.add_init_script(KEEP_SOCKET)
        page.set_default_timeout(15_000)
        log_in(page, base, "rita")
        page.goto(f"{base}/approvals/")
        expect(page.locator("#live-state")).to_have_text("live")
        row = page.locator(f"#esc-{pk}")
        edit = row.locator("textarea.args-edit")
        reason = row.locator("input.reject-reason")
        pick = row.locator("input.pick")

        def still_there() -> None:
            expect(edit).to_be_visible()
            expect(edit).to_have_value(edited)
            expect(reason).to_have_value("half-typed")
            expect(pick).to_be_checked()
            expect(edit).to_be_focused()

        row.locator("details.edit summary").click()
        reason.fill("half-typed")
        pick.check()
        edit.fill(edited)
        expect(row).to_contain_text("0/2 approvals")
        in_thread(
            lambda: services.escalation_decide(
                escalation=Escalation.objects.get(pk=pk), actor=alice, outcome="approve"
            )
        )
        expect(row).to_contain_text("1/2 approvals")  # the row was re-rendered
        still_there()

        row.evaluate("(tr) => tr.setAttribute('data-before-reconnect', '')")
        page.evaluate("window.__socket.reconnect()")
        expect(page.locator("#pending-rows tr[data-before-reconnect]")).to_have_count(0)
        expect(page.locator("#live-state")).to_have_text("live")
        still_there()
        browser.close()
        agent.http.close()


def test_a_long_queue_shows_its_first_rows_refills_as_they_go_and_keeps_a_ticked_one(
    rita, alice, sre, monkeypatch
):
    """CONSOLE_INBOX_ROWS=3 on the server: the page shows the three soonest of five and says
    so; a row decided elsewhere leaves and the next comes in; a sooner arrival pushes the
    last row out, unless the reviewer has ticked it; an arrival the cap keeps off the page
    still raises its notification."""
    monkeypatch.setenv("CONSOLE_INBOX_ROWS", "3")
    ensure_approval_hook(sre)
    with daphne_server() as base, sync_playwright() as playwright:
        agent = Agent(base, sre.token)
        ids = [agent.escalate("restart_service", {"service": f"s{n}"}) for n in range(5)]
        for minutes, pk in enumerate(ids, start=20):
            expire_in(pk, minutes * 60)  # 20 to 24 minutes; an arrival's 10 sorts first
        browser = launch_chromium(playwright)
        context = browser.new_context(
            permissions=["notifications"], viewport={"width": 1440, "height": 900}
        )
        context.add_init_script(RECORD_NOTIFICATIONS)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        page.set_default_timeout(15_000)
        log_in(page, base, "rita")
        page.goto(f"{base}/approvals/")
        expect(page.locator("#live-state")).to_have_text("live")
        page.locator("#notify-toggle").click()
        note = page.locator("#pending-more")
        assert row_ids(page) == ids[:3]
        expect(note).to_be_visible()
        expect(note).to_contain_text("Showing the first 3 of 5 open escalations")

        in_thread(
            lambda: services.escalation_decide(
                escalation=Escalation.objects.get(pk=ids[0]), actor=alice, outcome="approve"
            )
        )
        expect(page.locator(f"#esc-{ids[3]}")).to_have_count(1)  # refilled by a re-sync
        assert row_ids(page) == ids[1:4]
        expect(note).to_contain_text("Showing the first 3 of 4 open escalations")

        soonest = agent.escalate("restart_service", {"service": "soonest"})
        expect(page.locator(f"#esc-{soonest}")).to_have_count(1)
        expect(page.locator(f"#esc-{ids[3]}")).to_have_count(0)  # pushed past the cap
        assert row_ids(page) == [soonest, ids[1], ids[2]]
        expect(note).to_contain_text("Showing the first 3 of 5 open escalations")

        page.locator(f"#esc-{ids[2]} input.pick").check()
        later = agent.escalate("scale_deployment", {"service": "later"})
        expect(page.locator(f"#esc-{later}")).to_have_count(1)
        # The ticked row stays although it sorts last; the unticked one before it made room.
        expect(page.locator(f"#esc-{ids[1]}")).to_have_count(0)
        assert row_ids(page) == [soonest, later, ids[2]]
        expect(page.locator(f"#esc-{ids[2]} input.pick")).to_be_checked()
        expect(note).to_contain_text("Showing the first 3 of 6 open escalations")

        # It sorts after `later` (same 10 minutes, made after it): past the cap, off the page,
        # and still announced.
        last = agent.escalate("restart_service", {"service": "last"})
        expect(note).to_contain_text("Showing the first 3 of 7 open escalations")
        assert row_ids(page) == [soonest, later, ids[2]]
        page.wait_for_function("window.__notifications.length === 3")
        tags = [n["tag"] for n in page.evaluate("window.__notifications")]
        assert tags == [f"escalation-{pk}" for pk in (soonest, later, last)]

        # A row past the cap decided elsewhere: only the count changes, nothing errs.
        in_thread(
            lambda: services.escalation_decide(
                escalation=Escalation.objects.get(pk=ids[4]), actor=alice, outcome="approve"
            )
        )
        expect(note).to_contain_text("Showing the first 3 of 6 open escalations")
        assert row_ids(page) == [soonest, later, ids[2]]
        shot(page, "inbox-capped-1440.png")
        assert errors == []
        browser.close()
        agent.http.close()


def test_on_a_phone_the_first_card_shows_approve_and_reject_with_44px_targets(rita, sre):
    ensure_approval_hook(sre)
    with daphne_server() as base, sync_playwright() as playwright:
        agent = Agent(base, sre.token)
        ids = [
            agent.escalate(
                "restart_service",
                {"service": f"svc-{n}", "reason": "deploy 4.2.1 rollout stalled " * 3},
                transcript='{"role": "user", "content": "restart it"}',
            )
            for n in range(3)
        ]
        browser = launch_chromium(playwright)
        page = browser.new_page(
            viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True
        )
        page.set_default_timeout(15_000)
        log_in(page, base, "rita")
        page.goto(f"{base}/approvals/")
        expect(page.locator("#live-state")).to_have_text("live")
        # Whichever row is first when measured: the socket's re-sync and the page's sort by
        # time left may still reorder the rows after "live" (a phone folds the other cards).
        first = page.locator("#pending-rows tr.esc:not(.departed)").first
        for target in (
            first.locator(".approve-button"),
            first.locator(".reject-button"),
            first.locator(".reject-reason"),
            first.locator(".pick-area"),
        ):
            expect(target).to_be_visible()
            box = target.bounding_box()
            assert box is not None
            assert box["y"] >= 0 and box["y"] + box["height"] <= 844, (target, box)
            assert box["height"] >= 44 and box["width"] >= 44, (target, box)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        assert len(ids) == 3
        shot(page, "inbox-390.png")
        browser.close()
        agent.http.close()
