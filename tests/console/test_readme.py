"""The README stays true: every setting is in its table, its example document is the seed
document and the API accepts it, its error example is what the API answers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from django.test import Client

from demo.documents import SEED_CUSTOM_AGENT_YAML

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, re.S)


def test_every_variable_read_by_settings_is_in_the_configuration_table():
    source = (ROOT / "console" / "settings.py").read_text()
    read = set(re.findall(r'env_(?:str|bool|int|list)\(\s*"([A-Z0-9_]+)"', source))
    # The console's table: from "## Configuration" up to the agent side's own table.
    console_table = README.split("## Configuration", 1)[1].split("On the agent side", 1)[0]
    documented = set(re.findall(r"^\| `([A-Z0-9_]+)` \|", console_table, re.M))
    assert read, "no env_* calls found in settings"
    assert read - documented == set()
    assert documented - read == set()


def test_the_two_commands_and_the_docs_link_are_there():
    assert "make run" in README and "make test" in README
    assert "/api/docs/" in README
    for user in ("admin", "reviewer", "auditor"):
        assert f"| `{user}` | `{user}` |" in README


def test_example_document_is_the_seed_document():
    documents = [yaml.safe_load(block) for block in _blocks("yaml")]
    assert yaml.safe_load(SEED_CUSTOM_AGENT_YAML) in documents


@pytest.mark.django_db
def test_example_document_is_accepted_and_example_error_is_what_the_api_says(sre):
    document = next(b for b in _blocks("yaml") if b.startswith("api_version"))
    url = "/api/v2/extendedAgent/agents/my_hooked_agent"
    client = Client()
    response = client.put(url, document, content_type="application/yaml", **sre.headers())
    assert response.status_code == 201, response.content
    assert "warnings" not in response.json()
    broken = yaml.safe_load(document)
    broken["spec"]["hooks"]["PostToolUse"][0]["timeout"] = 301
    refused = client.put(url, json.dumps(broken), content_type="application/json", **sre.headers())
    assert refused.json() == json.loads(_blocks("json")[0])


def test_agent_side_variables_are_documented():
    agent_table = README.split("On the agent side", 1)[1].split("## ", 1)[0]
    source = "".join(
        (ROOT / "console_client" / name).read_text()
        for name in ("llm.py", "sandbox.py", "runners.py")
    )
    for name in re.findall(r"^\| `([A-Z0-9_]+)` \|", agent_table, re.M):
        assert name in source, name
    assert {"CONSOLE_LLM_BASE_URL", "CONSOLE_HOOKS_UNSANDBOXED"} <= set(
        re.findall(r"`([A-Z0-9_]+)`", agent_table)
    )
