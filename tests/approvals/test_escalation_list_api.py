"""GET /api/v1/escalations: reviewers see what they may decide, newest first, paginated."""

from __future__ import annotations

from approvals import services
from console import services as console_services


def test_reviewer_lists_pending_newest_first_with_tool_arguments_expiry(reviewer_client, escalate):
    first = escalate("restart_service", {"service": "api"})
    second = escalate("scale_deployment", {"service": "web", "replicas": 2})
    body = reviewer_client.get("/api/v1/escalations?status=pending").json()
    assert [item["id"] for item in body["items"]] == [str(second.pk), str(first.pk)]
    item = body["items"][0]
    assert item["tool_name"] == "scale_deployment"
    assert item["arguments"] == {"service": "web", "replicas": 2}
    assert item["expires_at"] and item["agent"] == "sre-agent"
    assert body["next_cursor"] is None


def test_decided_escalations_leave_the_pending_list(reviewer_client, escalate, rita):
    escalation = escalate()
    services.escalation_decide(escalation=escalation, actor=rita, outcome="approve")
    assert reviewer_client.get("/api/v1/escalations").json()["items"] == []
    approved = reviewer_client.get("/api/v1/escalations?status=approved").json()["items"]
    assert [item["id"] for item in approved] == [str(escalation.pk)]


def test_filter_by_agent_and_cursor_pagination(reviewer_client, escalate, other):
    mine = [escalate("restart_service", {"service": f"s{n}"}) for n in range(3)]
    escalate(agent=other)
    page = reviewer_client.get("/api/v1/escalations?agent=sre-agent&limit=2").json()
    assert len(page["items"]) == 2 and page["next_cursor"]
    rest = reviewer_client.get(
        f"/api/v1/escalations?agent=sre-agent&limit=2&cursor={page['next_cursor']}"
    ).json()
    ids = [item["id"] for item in page["items"] + rest["items"]]
    assert ids == [str(e.pk) for e in reversed(mine)]
    assert rest["next_cursor"] is None


def test_bad_parameters_are_400(reviewer_client):
    assert reviewer_client.get("/api/v1/escalations?status=weird").status_code == 400
    assert reviewer_client.get("/api/v1/escalations?limit=0").status_code == 400
    assert reviewer_client.get("/api/v1/escalations?cursor=%%%").status_code == 400


def test_restricted_reviewer_sees_only_their_agents(reviewer_client, rita, alice, other, escalate):
    escalate()
    theirs = escalate(agent=other)
    services.reviewer_scope_set(actor=alice, user=rita, agents=[other.agent])
    items = reviewer_client.get("/api/v1/escalations").json()["items"]
    assert [item["id"] for item in items] == [str(theirs.pk)]


def test_auditors_outsiders_and_agents_cannot_list(auditor_client, outsider_client, sre, client):
    assert auditor_client.get("/api/v1/escalations").status_code == 403
    assert outsider_client.get("/api/v1/escalations").status_code == 403
    assert client.get("/api/v1/escalations", **sre.headers()).status_code == 403


def test_reviewer_token_lists(rita, escalate, client):
    escalate()
    token = console_services.api_token_issue(actor=None, user=rita).plaintext
    response = client.get("/api/v1/escalations", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200 and len(response.json()["items"]) == 1


def test_the_list_with_tool_arguments_is_never_cached(reviewer_client, escalate):
    escalate()
    assert reviewer_client.get("/api/v1/escalations").headers["Cache-Control"] == "no-store"
