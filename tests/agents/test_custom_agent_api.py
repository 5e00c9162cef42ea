"""REST v2 custom agents: the seed document round trip (YAML and JSON), list, delete,
atomicity and per-object permissions."""

from __future__ import annotations

import json

import pytest
import yaml
from django.test import Client

from agents.models import ConfigRevision, CustomAgent, Hook
from console.governance.models import GovernanceEvent
from demo.documents import SEED_CUSTOM_AGENT_YAML

LIST_URL = "/api/v2/extendedAgent/agents"
URL = f"{LIST_URL}/my_hooked_agent"


def _seed() -> dict:
    return yaml.safe_load(SEED_CUSTOM_AGENT_YAML)


def _with_defaults(document: dict) -> dict:
    expected = json.loads(json.dumps(document))
    stop = expected["spec"]["hooks"]["Stop"][0]
    stop.update({"failMode": "allow", "model": "ReasoningFast", "maxRejections": 3})
    # Hooks without a name are named from the event and matcher (or type, for Stop).
    stop.update({"name": "Stop prompt", "mode": "enforce"})
    post = expected["spec"]["hooks"]["PostToolUse"][0]
    post.update({"name": "PostToolUse Bash|ExecuteShellCommand", "mode": "enforce"})
    return expected


@pytest.mark.django_db
def test_seed_yaml_document_round_trips_with_defaults_filled(sre):
    client = Client()
    response = client.put(
        URL, SEED_CUSTOM_AGENT_YAML, content_type="application/yaml", **sre.headers()
    )
    assert response.status_code == 201, response.content
    got = client.get(URL, **sre.headers()).json()
    assert got == _with_defaults(_seed())


@pytest.mark.django_db
def test_seed_json_document_round_trips_and_second_put_is_200(sre):
    client = Client()
    body = json.dumps(_seed())
    assert (
        client.put(URL, body, content_type="application/json", **sre.headers()).status_code == 201
    )
    again = client.put(URL, body, content_type="application/json", **sre.headers())
    assert again.status_code == 200
    assert again.json() == _with_defaults(_seed())


@pytest.mark.django_db
def test_get_as_yaml_when_asked(sre):
    client = Client()
    client.put(URL, SEED_CUSTOM_AGENT_YAML, content_type="application/yaml", **sre.headers())
    response = client.get(URL, HTTP_ACCEPT="application/yaml", **sre.headers())
    assert response["Content-Type"].startswith("application/yaml")
    assert yaml.safe_load(response.content) == _with_defaults(_seed())


@pytest.mark.django_db
def test_invalid_document_writes_nothing(sre):
    client = Client()
    document = _seed()
    document["spec"]["hooks"]["PostToolUse"][0]["timeout"] = 301
    response = client.put(
        URL, json.dumps(document), content_type="application/json", **sre.headers()
    )
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {
        "/spec/hooks/PostToolUse/0/timeout": ["timeout must be between 1 and 300, got 301."]
    }
    assert not CustomAgent.objects.exists()
    assert not Hook.objects.filter(custom_agent__isnull=False).exists()
    assert not ConfigRevision.objects.filter(scope="custom_agent").exists()


def _put_seed(agent, **extra):
    return Client().put(
        URL, SEED_CUSTOM_AGENT_YAML, content_type="application/yaml", **agent.headers(), **extra
    )


def _counts() -> tuple[int, int, int, int]:
    return (
        CustomAgent.objects.count(),
        Hook.objects.count(),
        ConfigRevision.objects.count(),
        GovernanceEvent.objects.count(),
    )


@pytest.mark.django_db
def test_list_returns_every_custom_agent_of_the_agent_as_documents(sre):
    client = Client()
    _put_seed(sre)
    second = _seed()
    second["metadata"]["name"] = "another"
    client.put(
        LIST_URL + "/another", json.dumps(second), content_type="application/json", **sre.headers()
    )
    response = client.get(LIST_URL, **sre.headers())
    assert response.status_code == 200
    items = response.json()["value"]
    assert [item["metadata"]["name"] for item in items] == ["another", "my_hooked_agent"]
    assert items[1] == _with_defaults(_seed())


@pytest.mark.django_db
def test_list_as_yaml_when_asked(sre):
    _put_seed(sre)
    response = Client().get(LIST_URL, HTTP_ACCEPT="application/yaml", **sre.headers())
    assert response["Content-Type"].startswith("application/yaml")
    assert yaml.safe_load(response.content)["value"][0] == _with_defaults(_seed())


@pytest.mark.django_db
def test_delete_is_204_then_get_is_404(sre):
    client = Client()
    _put_seed(sre)
    response = client.delete(URL, **sre.headers())
    assert response.status_code == 204
    assert response.content == b""
    missing = client.get(URL, **sre.headers())
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"
    assert client.delete(URL, **sre.headers()).status_code == 404
    assert not Hook.objects.filter(custom_agent__isnull=False).exists()


@pytest.mark.django_db
def test_get_of_an_unknown_custom_agent_is_404(sre):
    response = Client().get(URL, **sre.headers())
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


@pytest.mark.django_db
def test_invalid_document_writes_no_revision_or_governance_event(sre):
    before = _counts()
    document = _seed()
    document["spec"]["hooks"]["Stop"][0]["type"] = "shell"
    response = Client().put(
        URL, json.dumps(document), content_type="application/json", **sre.headers()
    )
    assert response.status_code == 400
    assert _counts() == before


@pytest.mark.django_db
def test_bad_replacement_leaves_the_existing_custom_agent_untouched(sre):
    client = Client()
    assert _put_seed(sre).status_code == 201
    stored = client.get(URL, **sre.headers()).json()
    keys = list(
        Hook.objects.filter(custom_agent__name="my_hooked_agent").values_list("key", flat=True)
    )
    before = _counts()
    document = _seed()
    document["spec"]["instructions"] = "Replaced instructions."
    document["spec"]["hooks"]["Stop"] = [{"type": "prompt", "prompt": "new"}]
    document["spec"]["hooks"]["PostToolUse"][0]["matcher"] = "Bash("
    response = client.put(
        URL, json.dumps(document), content_type="application/json", **sre.headers()
    )
    assert response.status_code == 400
    assert _counts() == before
    assert client.get(URL, **sre.headers()).json() == stored
    assert (
        list(
            Hook.objects.filter(custom_agent__name="my_hooked_agent").values_list("key", flat=True)
        )
        == keys
    )


@pytest.mark.django_db
def test_hooks_may_carry_enabled_false_through_the_round_trip(sre):
    document = _seed()
    document["spec"]["hooks"]["PostToolUse"][0]["enabled"] = False
    response = Client().put(
        URL, json.dumps(document), content_type="application/json", **sre.headers()
    )
    assert response.status_code == 201
    assert response.json()["spec"]["hooks"]["PostToolUse"][0]["enabled"] is False
    assert (
        Hook.objects.get(custom_agent__name="my_hooked_agent", event="PostToolUse").enabled is False
    )


# Per-object permissions


@pytest.mark.django_db
def test_agent_token_cannot_read_or_delete_another_agents_custom_agent(sre, other):
    client = Client()
    _put_seed(sre)
    assert client.get(URL, **other.headers()).status_code == 404
    assert client.get(URL + "?agent=sre-agent", **other.headers()).status_code == 404
    assert client.get(LIST_URL, **other.headers()).json() == {"value": []}
    assert client.get(LIST_URL + "?agent=sre-agent", **other.headers()).json() == {"value": []}
    assert client.delete(URL + "?agent=sre-agent", **other.headers()).status_code == 404
    assert CustomAgent.objects.filter(agent=sre.agent, name="my_hooked_agent").exists()


@pytest.mark.django_db
def test_same_custom_agent_name_under_two_agents_never_leaks(sre, other):
    client = Client()
    _put_seed(sre)
    document = _seed()
    document["spec"]["instructions"] = "Other agent's instructions."
    document["spec"]["hooks"] = {}
    response = client.put(
        URL + "?agent=sre-agent",
        json.dumps(document),
        content_type="application/json",
        **other.headers(),
    )
    assert response.status_code == 201
    assert client.get(URL, **sre.headers()).json() == _with_defaults(_seed())
    mine = client.get(URL, **other.headers()).json()
    assert mine["spec"]["instructions"] == "Other agent's instructions."
    assert mine["spec"]["hooks"] == {}
    assert client.delete(URL, **other.headers()).status_code == 204
    assert client.get(URL, **sre.headers()).status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("persona", ["reviewer_client", "auditor_client", "outsider_client"])
def test_people_without_the_admin_role_get_403_on_every_custom_agent_endpoint(
    request, sre, persona
):
    client = request.getfixturevalue(persona)
    _put_seed(sre)
    body = json.dumps(_seed())
    query = "?agent=sre-agent"
    responses = [
        client.get(LIST_URL + query),
        client.get(URL + query),
        client.put(URL + query, body, content_type="application/json"),
        client.delete(URL + query),
    ]
    assert [r.status_code for r in responses] == [403, 403, 403, 403]
    assert all(r.json()["error"]["code"] == "forbidden" for r in responses)
    assert client.get(URL + query).json()["error"]["message"]
    assert CustomAgent.objects.get(agent=sre.agent).instructions == "You are a helpful assistant.\n"


@pytest.mark.django_db
def test_anonymous_callers_get_401_on_every_custom_agent_endpoint(sre):
    client = Client()
    body = json.dumps(_seed())
    responses = [
        client.get(LIST_URL + "?agent=sre-agent"),
        client.get(URL + "?agent=sre-agent"),
        client.put(URL + "?agent=sre-agent", body, content_type="application/json"),
        client.delete(URL + "?agent=sre-agent"),
        client.get(URL, HTTP_AUTHORIZATION="Bearer agt_not-a-real-token"),
    ]
    assert [r.status_code for r in responses] == [401] * 5
    assert all(r.json()["error"]["code"] == "not_authenticated" for r in responses)
    assert not CustomAgent.objects.exists()


@pytest.mark.django_db
def test_admin_manages_an_agents_custom_agents_with_the_agent_parameter(admin_client, sre):
    query = "?agent=sre-agent"
    created = admin_client.put(URL + query, SEED_CUSTOM_AGENT_YAML, content_type="application/yaml")
    assert created.status_code == 201, created.content
    assert CustomAgent.objects.get(agent=sre.agent).name == "my_hooked_agent"
    assert admin_client.get(URL + query).json() == _with_defaults(_seed())
    assert len(admin_client.get(LIST_URL + query).json()["value"]) == 1
    assert admin_client.delete(URL + query).status_code == 204
    assert ConfigRevision.objects.filter(agent=sre.agent, actor__username="alice").count() == 2


@pytest.mark.django_db
def test_admin_without_the_agent_parameter_gets_400_naming_it(admin_client, sre):
    for response in (
        admin_client.get(LIST_URL),
        admin_client.get(URL),
        admin_client.put(URL, SEED_CUSTOM_AGENT_YAML, content_type="application/yaml"),
        admin_client.delete(URL),
    ):
        assert response.status_code == 400
        assert list(response.json()["error"]["fields"]) == ["/agent"]


@pytest.mark.django_db
def test_admin_naming_an_unknown_agent_gets_404(admin_client, sre):
    response = admin_client.get(LIST_URL + "?agent=no-such-agent")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


@pytest.mark.django_db
def test_admin_personal_token_works_like_a_session(alice, sre):
    from console.services import api_token_issue

    token = api_token_issue(actor=None, user=alice).plaintext
    response = Client().put(
        URL + "?agent=sre-agent",
        SEED_CUSTOM_AGENT_YAML,
        content_type="application/yaml",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 201


def _list_queries(agent) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        response = Client().get(LIST_URL, **agent.headers())
    assert response.status_code == 200
    return len(queries)


@pytest.mark.django_db
def test_list_query_count_does_not_grow_with_custom_agents(sre):
    client = Client()
    _put_seed(sre)
    one = _list_queries(sre)
    for index in range(5):
        document = _seed()
        document["metadata"]["name"] = f"helper-{index}"
        client.put(
            f"{LIST_URL}/helper-{index}",
            json.dumps(document),
            content_type="application/json",
            **sre.headers(),
        )
    assert len(client.get(LIST_URL, **sre.headers()).json()["value"]) == 6
    assert _list_queries(sre) == one


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url",
    [
        f"{LIST_URL}/bad%20name",
        f"{LIST_URL}/{'x' * 65}",
        f"{LIST_URL}?agent=-leading-dash",
        f"{LIST_URL}/my_hooked_agent?agent=bad%20slug",
    ],
)
def test_names_no_agent_can_have_are_404(admin_client, sre, url):
    admin_client.raise_request_exception = False
    responses = [admin_client.get(url)]
    if not url.startswith(f"{LIST_URL}?"):
        responses.append(admin_client.delete(url))
    for response in responses:
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"
