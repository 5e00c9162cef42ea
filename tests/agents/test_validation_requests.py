"""Bodies that cannot be read as a document get a clear 4xx in the error shape, never a 500."""

from __future__ import annotations

import json

import pytest
import yaml
from django.test import Client

from agents.models import CustomAgent
from demo.documents import SEED_CUSTOM_AGENT_YAML

URL = "/api/v2/extendedAgent/agents/my_hooked_agent"
HOOKS_URL = "/api/v1/agent/hooks"


def _error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    error = response.json()["error"]
    assert set(error) == {"code", "message", "fields"}
    assert error["code"] == code
    return error


@pytest.mark.django_db
def test_malformed_yaml_is_a_400_naming_yaml(sre):
    body = "api_version: azuresre.ai/v2\nspec: [unclosed\n"
    response = Client().put(URL, body, content_type="application/yaml", **sre.headers())
    assert "Malformed YAML" in _error(response, 400, "malformed")["message"]


@pytest.mark.django_db
def test_malformed_json_is_a_400(sre):
    response = Client().put(
        URL, '{"api_version": ', content_type="application/json", **sre.headers()
    )
    assert "JSON parse error" in _error(response, 400, "malformed")["message"]


@pytest.mark.django_db
@pytest.mark.parametrize("content_type", ["text/plain", "application/xml", "multipart/form-data"])
def test_unsupported_content_type_is_a_415(sre, content_type):
    response = Client().generic(
        "PUT", URL, SEED_CUSTOM_AGENT_YAML, content_type=content_type, **sre.headers()
    )
    assert content_type in _error(response, 415, "unsupported_media_type")["message"]
    assert not CustomAgent.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("content_type", ["application/x-yaml", "text/yaml"])
def test_common_yaml_spellings_are_accepted(sre, content_type):
    response = Client().put(URL, SEED_CUSTOM_AGENT_YAML, content_type=content_type, **sre.headers())
    assert response.status_code == 201, response.content


@pytest.mark.django_db
@pytest.mark.parametrize("url", [URL, HOOKS_URL])
def test_body_over_one_mebibyte_is_a_413(sre, url):
    body = "# padding\n" * (1024 * 1024 // 10 + 1)
    assert len(body.encode()) > 1024 * 1024
    response = Client().put(url, body, content_type="application/yaml", **sre.headers())
    assert "limit is 1048576" in _error(response, 413, "too_large")["message"]
    assert not CustomAgent.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("content_type", ["application/yaml", "application/json"])
def test_body_that_is_not_utf8_is_a_400(sre, content_type):
    body = SEED_CUSTOM_AGENT_YAML.replace("helpful", "h\xe9lpful").encode("latin-1")
    if content_type == "application/json":
        body = b'{"api_version": "azuresre.ai/v2", "kind": "Ext\xe9ndedAgent"}'
    response = Client().put(URL, body, content_type=content_type, **sre.headers())
    _error(response, 400, "malformed")
    assert not CustomAgent.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("content_type", ["application/yaml", "application/json"])
def test_empty_body_is_a_400(sre, content_type):
    response = Client().put(URL, b"", content_type=content_type, **sre.headers())
    assert response.status_code == 400, response.content
    assert response.json()["error"]["fields"]


@pytest.mark.django_db
def test_yaml_values_that_are_not_json_types_are_refused_by_field(sre):
    body = SEED_CUSTOM_AGENT_YAML.replace("You are a helpful assistant.", "x").replace(
        "  instructions: |\n    x\n", "  instructions: 2024-01-01\n"
    )
    assert "instructions: 2024-01-01" in body
    response = Client().put(URL, body, content_type="application/yaml", **sre.headers())
    assert (
        "instructions must be a string"
        in _error(response, 400, "invalid")["fields"]["/spec/instructions"][0]
    )


@pytest.mark.django_db
@pytest.mark.timeout(30)
def test_yaml_alias_bomb_is_refused_without_expanding_it(sre):
    # Nine levels of ten-fold aliases: a billion strings if anything ever expands them.
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in range(1, 10):
        refs = ",".join([f"*a{level - 1}"] * 10)
        lines.append(f"a{level}: &a{level} [{refs}]")
    lines.append("api_version: *a9")
    lines.append("kind: *a9")
    lines.append("metadata: {name: *a9}")
    lines.append("spec: {hooks: {Stop: [{type: *a9, prompt: *a9}]}}")
    response = Client().put(URL, "\n".join(lines), content_type="application/yaml", **sre.headers())
    assert response.status_code == 400
    assert len(response.content) < 20_000


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("application/json", "[" * 100_000 + "]" * 100_000),
        ("application/yaml", "[" * 100_000 + "]" * 100_000),
        ("application/json", '{"spec": ' * 50_000 + "1" + "}" * 50_000),
    ],
)
def test_deeply_nested_body_is_a_400_not_a_crash(sre, content_type, body):
    response = Client().put(URL, body, content_type=content_type, **sre.headers())
    assert "nested too deeply" in _error(response, 400, "malformed")["message"]


@pytest.mark.django_db
def test_agent_hooks_endpoint_reports_malformed_json_in_the_error_shape(sre):
    response = Client().put(HOOKS_URL, "{hooks:", content_type="application/json", **sre.headers())
    _error(response, 400, "malformed")


@pytest.mark.django_db
@pytest.mark.parametrize("url", [URL, HOOKS_URL])
def test_chunked_body_without_content_length_is_a_411_and_changes_nothing(sre, url):
    from agents.models import Hook
    from agents.services import agent_hooks_replace

    agent_hooks_replace(
        actor=None, agent=sre.agent, document={"hooks": {"Stop": [{"prompt": "Done?"}]}}
    )
    # What a streaming client sends: no Content-Length, the body framed by chunked encoding.
    response = Client().generic(
        "PUT",
        url,
        SEED_CUSTOM_AGENT_YAML,
        content_type="application/yaml",
        CONTENT_LENGTH="",
        HTTP_TRANSFER_ENCODING="chunked",
        **sre.headers(),
    )
    assert "Content-Length" in _error(response, 411, "length_required")["message"]
    assert Hook.objects.filter(agent=sre.agent, custom_agent=None).count() == 1
    assert not CustomAgent.objects.exists()


@pytest.mark.django_db
def test_unsupported_method_is_a_405_in_the_error_shape(sre):
    response = Client().post(URL, "{}", content_type="application/json", **sre.headers())
    _error(response, 405, "method_not_allowed")


def _document_with(**spec) -> dict:
    document = yaml.safe_load(SEED_CUSTOM_AGENT_YAML)
    document["spec"].update(spec)
    return document


@pytest.mark.django_db
@pytest.mark.parametrize("content_type", ["application/json", "application/yaml"])
@pytest.mark.parametrize(
    ("pointer", "edit"),
    [
        ("/spec/instructions", lambda d: d["spec"].update(instructions="a\x00b")),
        ("/spec/handoffDescription", lambda d: d["spec"].update(handoffDescription="\x00")),
        (
            "/spec/hooks/Stop/0/prompt",
            lambda d: d["spec"]["hooks"]["Stop"][0].update(prompt="x\x00"),
        ),
        (
            "/spec/hooks/PostToolUse/0/script",
            lambda d: d["spec"]["hooks"]["PostToolUse"][0].update(script="#!/bin/bash\n\x00"),
        ),
    ],
)
def test_nul_characters_are_refused_by_pointer_not_a_database_crash(
    sre, content_type, pointer, edit
):
    document = _document_with()
    edit(document)
    body = json.dumps(document) if content_type == "application/json" else yaml.safe_dump(document)
    response = Client().put(URL, body, content_type=content_type, **sre.headers())
    fields = _error(response, 400, "invalid")["fields"]
    assert fields == {pointer: [f"{pointer.rsplit('/', 1)[1]} must not contain NUL characters."]}
    assert not CustomAgent.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("content_type", "body", "pointer"),
    [
        ("application/json", '{"api_version": "azuresre.ai/v2", "kind": "\\ud800"}', "/kind"),
        ("application/json", '{"spec": {"\\udfff": 1}}', "/spec"),
        (
            "application/json",
            '{"hooks": {"Stop": [{"prompt": "\\ud800"}]}}',
            "/hooks/Stop/0/prompt",
        ),
    ],
)
def test_lone_surrogates_are_refused_by_pointer_not_a_crash(sre, content_type, body, pointer):
    response = Client().put(URL, body, content_type=content_type, **sre.headers())
    fields = _error(response, 400, "invalid")["fields"]
    assert list(fields) == [pointer]
    assert "Unicode" in fields[pointer][0]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url",
    [
        f"{URL}%00",
        f"{URL}?agent=a%00b",
        "/api/v1/agent/hooks?agent=%00",
        "/api/v1/records?q=%00",
        "/agents/a%00b/",
        "/audit/?q=a%00",
    ],
)
def test_addresses_holding_a_nul_byte_are_400_everywhere(admin_client, url):
    admin_client.raise_request_exception = False
    response = admin_client.get(url)
    assert response.status_code == 400
    if url.startswith("/api/"):
        assert "NUL" in _error(response, 400, "invalid")["message"]


@pytest.mark.django_db
def test_yaml_python_tags_are_refused(sre):
    body = "!!python/object/apply:os.system ['touch /tmp/should-not-exist']\n"
    response = Client().put(URL, body, content_type="application/yaml", **sre.headers())
    assert "Malformed YAML" in _error(response, 400, "malformed")["message"]
