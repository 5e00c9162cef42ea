"""/approvals/link/<token>/: the signed decision link of the generic webhook. It needs a
login and the reviewer's role and scope, as the inbox does; once decided it shows the
decision; its form posts with the CSRF token."""

from __future__ import annotations

from django.test import Client

from approvals import services
from approvals.links import decision_link_token
from approvals.models import EscalationStatus, EscalationVote


def link(escalation) -> str:
    return f"/approvals/link/{decision_link_token(escalation)}/"


def test_reviewer_sees_the_call_and_both_buttons(reviewer_client, escalate):
    escalation = escalate("restart_service", {"service": "payments"})
    page = reviewer_client.get(link(escalation))
    html = page.content.decode()
    assert page.status_code == 200
    assert page["Cache-Control"].startswith("max-age=0")  # never_cache: it shows arguments
    for fact in ("restart_service", "sre-agent", "&quot;payments&quot;", 'id="link-approve"'):
        assert fact in html, fact
    assert 'id="link-reject"' in html and 'name="csrfmiddlewaretoken"' in html


def test_anonymous_visitor_is_sent_to_log_in_first(escalate):
    escalation = escalate()
    page = Client().get(link(escalation))
    assert page.status_code == 302
    assert page["Location"].startswith("/accounts/login/?next=/approvals/link/")


def test_people_who_may_not_decide_it_are_refused(auditor_client, rita, other, escalate):
    escalation = escalate()
    assert auditor_client.get(link(escalation)).status_code == 403
    services.reviewer_scope_set(actor=None, user=rita, agents=[other.agent])
    scoped = Client()
    scoped.force_login(rita)
    assert scoped.get(link(escalation)).status_code == 404
    assert scoped.post(link(escalation), {"outcome": "approve"}).status_code == 404
    assert EscalationVote.objects.count() == 0


def test_altered_link_is_404_and_decides_nothing(reviewer_client, escalate):
    escalation = escalate()
    altered = link(escalation)[:-3] + "x/"
    page = reviewer_client.get(altered)
    assert page.status_code == 404 and "not valid" in page.content.decode()
    assert reviewer_client.post(altered, {"outcome": "approve"}).status_code == 404
    escalation.refresh_from_db()
    assert escalation.status == EscalationStatus.PENDING


def test_approve_decides_then_the_link_shows_the_decision(reviewer_client, rita, escalate):
    escalation = escalate()
    answer = reviewer_client.post(link(escalation), {"outcome": "approve"})
    assert answer.status_code == 302 and answer["Location"] == link(escalation)
    escalation.refresh_from_db()
    assert escalation.status == EscalationStatus.APPROVED and escalation.decided_by == rita
    html = reviewer_client.get(link(escalation)).content.decode()
    assert "Approved</strong> by rita" in html
    assert 'id="link-approve"' not in html and 'id="link-reject"' not in html


def test_the_link_is_one_time_a_second_decision_is_refused(reviewer_client, admin_client, escalate):
    escalation = escalate()
    reviewer_client.post(link(escalation), {"outcome": "approve"})
    page = admin_client.post(
        link(escalation), {"outcome": "reject", "reason": "too late"}, follow=True
    )
    assert "Nothing decided: The escalation is already approved." in page.content.decode()
    escalation.refresh_from_db()
    assert escalation.status == EscalationStatus.APPROVED
    assert EscalationVote.objects.filter(escalation=escalation).count() == 1


def test_decided_in_the_inbox_first_the_link_shows_who(reviewer_client, admin_client, escalate):
    escalation = escalate()
    admin_client.post(f"/approvals/{escalation.pk}/decision/", {"outcome": "approve"})
    html = reviewer_client.get(link(escalation)).content.decode()
    assert "Approved</strong> by alice" in html and 'id="link-approve"' not in html


def test_reject_needs_a_reason(reviewer_client, escalate):
    escalation = escalate()
    page = reviewer_client.post(link(escalation), {"outcome": "reject"}, follow=True)
    assert "A reason is required." in page.content.decode()
    escalation.refresh_from_db()
    assert escalation.status == EscalationStatus.PENDING
    reviewer_client.post(link(escalation), {"outcome": "reject", "reason": "not now"})
    escalation.refresh_from_db()
    assert escalation.status == EscalationStatus.REJECTED
    assert escalation.decision_reason == "not now"


def test_post_without_the_csrf_token_is_refused(rita, escalate):
    escalation = escalate()
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(rita)
    assert browser.post(link(escalation), {"outcome": "approve"}).status_code == 403
    escalation.refresh_from_db()
    assert escalation.status == EscalationStatus.PENDING
