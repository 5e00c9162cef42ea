"""REST v2: the seed document goes in and comes back equal, YAML and JSON alike."""

from __future__ import annotations

import json

import pytest
import yaml
from django.test import Client

from agents.demo_documents import SEED_CUSTOM_AGENT_YAML
from agents.models import ConfigRevision, CustomAgent, Hook

URL = "/api/v2/extendedAgent/agents/my_hooked_agent"


def _seed() -> dict:
    return yaml.safe_load(SEED_CUSTOM_AGENT_YAML)


def _with_defaults(document: dict) -> dict:
    expected = json.loads(json.dumps(document))
    stop = expected["spec"]["hooks"]["Stop"][0]
    stop.update({"failMode": "allow", "model": "ReasoningFast", "maxRejections": 3})
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
