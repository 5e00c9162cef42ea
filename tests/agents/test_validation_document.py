"""Document-level rules of the ExtendedAgent v2 document, through the REST API."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from django.test import Client

from demo.documents import SEED_CUSTOM_AGENT_YAML

NAME = "my_hooked_agent"
URL = f"/api/v2/extendedAgent/agents/{NAME}"


def _seed() -> dict[str, Any]:
    return yaml.safe_load(SEED_CUSTOM_AGENT_YAML)


def _put(agent: Any, document: Any, url: str = URL) -> Any:
    return Client().put(
        url, json.dumps(document), content_type="application/json", **agent.headers()
    )


def _fields(response: Any) -> dict[str, list[str]]:
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert set(error) == {"code", "message", "fields"}
    assert error["code"] == "invalid"
    return error["fields"]


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["azuresre.ai/v1", "v2", None])
def test_wrong_api_version_is_refused(sre, value):
    document = _seed()
    document["api_version"] = value
    fields = _fields(_put(sre, document))
    assert list(fields) == ["/api_version"]
    assert "must be 'azuresre.ai/v2'" in fields["/api_version"][0]


@pytest.mark.django_db
def test_missing_api_version_is_refused(sre):
    document = _seed()
    del document["api_version"]
    assert list(_fields(_put(sre, document))) == ["/api_version"]


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["Agent", "extendedagent", None])
def test_kind_other_than_extended_agent_is_refused(sre, value):
    document = _seed()
    document["kind"] = value
    fields = _fields(_put(sre, document))
    assert list(fields) == ["/kind"]
    assert "must be 'ExtendedAgent'" in fields["/kind"][0]


@pytest.mark.django_db
def test_missing_metadata_is_refused(sre):
    document = _seed()
    del document["metadata"]
    assert "metadata is required" in _fields(_put(sre, document))["/metadata"][0]


@pytest.mark.django_db
@pytest.mark.parametrize("metadata", [{}, {"name": ""}, {"name": None}])
def test_missing_metadata_name_is_refused(sre, metadata):
    document = _seed()
    document["metadata"] = metadata
    assert _fields(_put(sre, document))["/metadata/name"] == ["name is required."]


@pytest.mark.django_db
def test_metadata_name_with_illegal_characters_is_refused(sre):
    document = _seed()
    document["metadata"]["name"] = "bad name!"
    response = _put(sre, document, url="/api/v2/extendedAgent/agents/bad%20name!")
    assert "letters, digits" in _fields(response)["/metadata/name"][0]


@pytest.mark.django_db
def test_path_name_that_differs_from_metadata_name_is_refused(sre):
    response = _put(sre, _seed(), url="/api/v2/extendedAgent/agents/another_name")
    fields = _fields(response)
    assert "does not match the URL name 'another_name'" in fields["/metadata/name"][0]
    assert Client().get("/api/v2/extendedAgent/agents", **sre.headers()).json() == {"value": []}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("where", "pointer"),
    [
        ((), "/status"),
        (("metadata",), "/metadata/labels"),
        (("spec",), "/spec/tools"),
    ],
)
def test_unknown_keys_are_refused_by_name(sre, where, pointer):
    document = _seed()
    target = document
    for key in where:
        target = target[key]
    unknown = pointer.rsplit("/", 1)[1]
    target[unknown] = "x"
    fields = _fields(_put(sre, document))
    assert fields == {pointer: [f"Unknown field {unknown!r}."]}


@pytest.mark.django_db
def test_unknown_event_is_refused_by_name(sre):
    document = _seed()
    document["spec"]["hooks"]["SessionStart"] = [{"type": "prompt", "prompt": "hi"}]
    fields = _fields(_put(sre, document))
    assert list(fields) == ["/spec/hooks/SessionStart"]
    assert "Unknown event 'SessionStart'" in fields["/spec/hooks/SessionStart"][0]


@pytest.mark.django_db
def test_pointer_escapes_slash_and_tilde_in_keys(sre):
    document = _seed()
    document["spec"]["hooks"]["a/b~c"] = []
    assert list(_fields(_put(sre, document))) == ["/spec/hooks/a~1b~0c"]


@pytest.mark.django_db
def test_hooks_that_are_not_a_mapping_are_refused(sre):
    document = _seed()
    document["spec"]["hooks"] = [{"type": "prompt", "prompt": "hi"}]
    assert "mapping of event name" in _fields(_put(sre, document))["/spec/hooks"][0]


@pytest.mark.django_db
def test_event_whose_hooks_are_not_a_list_is_refused(sre):
    document = _seed()
    document["spec"]["hooks"]["Stop"] = {"type": "prompt", "prompt": "hi"}
    assert "Stop must be a list of hooks" in _fields(_put(sre, document))["/spec/hooks/Stop"][0]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("key", "value", "fragment"),
    [
        ("instructions", 5, "instructions must be a string"),
        ("handoffDescription", ["x"], "handoffDescription must be a string"),
        ("enableVanillaMode", "yes", "enableVanillaMode must be true or false"),
    ],
)
def test_spec_fields_of_the_wrong_type_are_refused(sre, key, value, fragment):
    document = _seed()
    document["spec"][key] = value
    assert fragment in _fields(_put(sre, document))[f"/spec/{key}"][0]


@pytest.mark.django_db
def test_spec_that_is_not_a_mapping_is_refused(sre):
    document = _seed()
    document["spec"] = "hooks please"
    assert _fields(_put(sre, document))["/spec"] == ["spec must be a mapping."]


@pytest.mark.django_db
@pytest.mark.parametrize("body", [[1, 2], "a string", 42, None])
def test_document_that_is_not_a_mapping_is_refused_at_the_root_pointer(sre, body):
    fields = _fields(_put(sre, body))
    assert list(fields) == [""]


@pytest.mark.django_db
def test_document_without_spec_is_accepted_with_empty_defaults(sre):
    document = {
        "api_version": "azuresre.ai/v2",
        "kind": "ExtendedAgent",
        "metadata": {"name": NAME},
    }
    response = _put(sre, document)
    assert response.status_code == 201, response.content
    assert response.json()["spec"] == {
        "instructions": "",
        "handoffDescription": "",
        "enableVanillaMode": False,
        "hooks": {},
    }


@pytest.mark.django_db
def test_every_error_of_a_document_is_reported_together(sre):
    document = _seed()
    document["kind"] = "Agent"
    document["spec"]["color"] = "blue"
    stop = document["spec"]["hooks"]["Stop"][0]
    stop["timeout"] = 0
    post = document["spec"]["hooks"]["PostToolUse"][0]
    post["failMode"] = "deny"
    del post["matcher"]
    fields = _fields(_put(sre, document))
    assert set(fields) == {
        "/kind",
        "/spec/color",
        "/spec/hooks/Stop/0/timeout",
        "/spec/hooks/PostToolUse/0/failMode",
        "/spec/hooks/PostToolUse/0/matcher",
    }


@pytest.mark.django_db
def test_name_mismatch_is_reported_with_the_documents_other_errors(sre):
    document = _seed()
    document["kind"] = "Agent"
    fields = _fields(_put(sre, document, url="/api/v2/extendedAgent/agents/another_name"))
    assert set(fields) == {"/kind", "/metadata/name"}
    assert "does not match the URL name" in fields["/metadata/name"][0]


@pytest.mark.django_db
def test_warnings_appear_only_when_there_are_some(sre):
    clean = _put(sre, _seed())
    assert clean.status_code == 201
    assert "warnings" not in clean.json()
    document = _seed()
    document["spec"]["hooks"]["PostToolUse"][0]["maxRejections"] = 4
    warned = _put(sre, document)
    assert warned.status_code == 200
    assert set(warned.json()["warnings"]) == {"/spec/hooks/PostToolUse/0/maxRejections"}
    stored = Client().get(URL, **sre.headers()).json()
    assert "warnings" not in stored
    assert stored["spec"]["hooks"]["PostToolUse"][0]["maxRejections"] == 4
