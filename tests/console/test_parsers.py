"""console.parsers: numbers that cannot be used (a 5,000-digit integer, infinity, NaN) are
a 400 naming the field wherever a document comes in (JSON and YAML, the API, the portal's
import and YAML editor, record batches), never a 500 and never stored."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from agents import services
from agents.models import CustomAgent, Hook
from console.errors import InvalidInput
from console.parsers import (
    NUMBER_MAX_DIGITS,
    UnusableNumber,
    ensure_storable,
    json_loads,
    yaml_loads,
)
from tests.audit.record_wires import items, sdk_session

BIG = "9" * 5000
URL = "/api/v2/extendedAgent/agents/numbers"
HOOKS_URL = "/api/v1/agent/hooks"
YAML_DOCUMENT = """api_version: azuresre.ai/v2
kind: ExtendedAgent
metadata: {name: numbers}
spec:
  hooks:
    Stop:
      - prompt: hi
        timeout: %s
"""
JSON_DOCUMENT = json.dumps(
    {
        "api_version": "azuresre.ai/v2",
        "kind": "ExtendedAgent",
        "metadata": {"name": "numbers"},
        "spec": {"hooks": {"Stop": [{"prompt": "hi", "timeout": 12345}]}},
    }
).replace("12345", "%s")


def _field_error(response, pointer: str) -> str:
    assert response.status_code == 400, response.content[:300]
    fields = response.json()["error"]["fields"]
    assert pointer in fields, fields
    return " ".join(fields[pointer])


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (BIG, "5000 digits"),
        ("-" + BIG, "5000 digits"),
        ("1e999", "finite"),
        ("-1e999", "finite"),
        ("NaN", "finite"),
        ("Infinity", "finite"),
        ("1." + BIG, "digits"),
    ],
)
def test_json_numbers_that_cannot_be_used_are_not_built(text, problem):
    value = json_loads('{"a": [' + text + "]}")["a"][0]
    assert isinstance(value, UnusableNumber) and problem in value.problem
    with pytest.raises(InvalidInput) as refused:
        ensure_storable({"a": [1, {"b": value}]})
    assert list(refused.value.fields) == ["/a/1/b"]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (BIG, "5000 digits"),
        ("0x" + "f" * 5000, "digits"),
        ("1_" * 3000 + "1", "digits"),
        (":".join(["59"] * 3000), "digits"),
        (".inf", "finite"),
        ("-.inf", "finite"),
        (".nan", "finite"),
        ("1:" * 400 + "1.5", "finite"),  # sexagesimal float past a double's range
    ],
)
def test_yaml_numbers_that_cannot_be_used_are_not_built(text, problem):
    value = yaml_loads(f"a: {text}\n")["a"]
    assert isinstance(value, UnusableNumber) and problem in value.problem


def test_ordinary_numbers_still_parse():
    assert json_loads("[1, -2, 3.5, 1e10, %s]" % ("9" * NUMBER_MAX_DIGITS)) == [
        1,
        -2,
        3.5,
        1e10,
        int("9" * NUMBER_MAX_DIGITS),
    ]
    assert yaml_loads("[1, 0x10, 010, 1_000, 1:30, 2.5, 1e3]") == [
        1, 16, 8, 1000, 90, 2.5, "1e3"
    ]  # fmt: skip


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("content_type", "document"),
    [("application/yaml", YAML_DOCUMENT), ("application/json", JSON_DOCUMENT)],
)
def test_a_5000_digit_timeout_is_a_400_naming_the_field(sre, content_type, document):
    response = Client().put(URL, document % BIG, content_type=content_type, **sre.headers())
    assert "5000 digits" in _field_error(response, "/spec/hooks/Stop/0/timeout")
    assert not CustomAgent.objects.exists() and not Hook.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("number", [".inf", ".nan", "-.inf"])
def test_infinite_yaml_numbers_are_a_400_naming_the_field(sre, number):
    response = Client().put(
        URL, YAML_DOCUMENT % number, content_type="application/yaml", **sre.headers()
    )
    assert "finite" in _field_error(response, "/spec/hooks/Stop/0/timeout")


@pytest.mark.django_db
def test_agent_level_hooks_name_the_field_too(sre):
    body = f"hooks:\n  Stop:\n    - prompt: hi\n      timeout: {BIG}\n"
    response = Client().put(HOOKS_URL, body, content_type="application/yaml", **sre.headers())
    assert "5000 digits" in _field_error(response, "/hooks/Stop/0/timeout")


@pytest.mark.django_db
@pytest.mark.parametrize("document", [YAML_DOCUMENT % BIG, JSON_DOCUMENT % BIG])
def test_portal_import_and_yaml_editor_refuse_a_5000_digit_number(admin_client, sre, document):
    response = admin_client.post("/agents/sre-agent/import/", {"text": document})
    assert response.status_code == 200
    form = response.context["import_form"]
    assert "/spec/hooks/Stop/0/timeout" in form.pointer_errors
    assert not CustomAgent.objects.exists()

    services.custom_agent_create(actor=None, agent=sre.agent, name="numbers")
    response = admin_client.post("/agents/sre-agent/custom/numbers/yaml/", {"text": document})
    assert response.status_code == 200
    assert "/spec/hooks/Stop/0/timeout" in response.context["form"].pointer_errors
    assert not Hook.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(("number", "problem"), [(BIG, "5000 digits"), ("1e999", "finite")])
def test_record_batches_name_the_number_that_cannot_be_used(sre, number, problem):
    raw = json.dumps(items(sdk_session(["ls"]))).replace(
        '"interceptors_registered": 2', f'"interceptors_registered": {number}', 1
    )
    response = Client().post(
        "/api/v1/records", data=raw, content_type="application/json", **sre.headers()
    )
    assert problem in _field_error(response, "/0/record/interceptors_registered")


@pytest.mark.django_db
def test_hook_test_context_refuses_numbers_that_cannot_be_used(admin_client, sre):
    response = admin_client.post(
        "/agents/sre-agent/hooks/test",
        {
            "event": "Stop",
            "type": "command",
            "command": "true",
            "context": f'{{"current_turn": {BIG}}}',
        },
    )
    assert response.status_code == 400
    assert "Sample context at /current_turn:" in response.content.decode()


def test_the_first_problem_in_document_order_is_named():
    data = json_loads('{"a": [1, 1e999, {"b": 1e999}], "c": 1e999}')
    with pytest.raises(InvalidInput) as refused:
        ensure_storable(data)
    assert list(refused.value.fields) == ["/a/1"]
    with pytest.raises(InvalidInput) as refused:
        ensure_storable(yaml_loads("{.inf: 1}"))
    assert "A field name" in refused.value.fields[""][0]
