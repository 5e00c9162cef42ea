"""A hook's page (/agents/<slug>/hooks/<key>/overview/): what it is, its scope's revisions and
what it decided per day, counted from the records of real traffic (Claude Code's endpoint
runs the same shared evaluation as agents), with links into the audit explorer."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client

from agents import services as agent_services
from agents.models import Hook
from tests.runtimes.runtime_support import BLOCK_RM_RF, CLAUDE_PRE, add_hook, payload, post_hook

RM = {"command": "rm -rf /home/dev/project/build", "description": "Clean the build"}
LS = {"command": "ls", "description": "List"}


def _url(hook: Hook) -> str:
    return f"/agents/{hook.agent.slug}/hooks/{hook.key}/overview/"


def _total(html: str, kind: str) -> int:
    match = re.search(
        rf'data-kind="{kind}"><a href="[^"]*"><span class="activity-count">(\d+)</span>', html
    )
    assert match, f"no {kind} total on the page"
    return int(match.group(1))


def _send(sre, tool_input, times=1) -> None:
    client = Client()
    for _ in range(times):
        assert (
            post_hook(
                client, sre, "claude-code", payload(CLAUDE_PRE, tool_input=tool_input)
            ).status_code
            == 200
        )


@pytest.mark.django_db
def test_a_shadow_hook_page_counts_what_it_would_have_blocked(admin_client, sre):
    hook = add_hook(
        sre,
        "PreToolUse",
        {
            **BLOCK_RM_RF,
            "name": "No rm -rf",
            "description": "Deletes go one by one.",
            "mode": "shadow",
        },
    )
    _send(sre, RM, times=2)
    _send(sre, LS)
    html = admin_client.get(_url(hook)).content.decode()
    assert "<h2>No rm -rf</h2>" in html and "Deletes go one by one." in html
    assert 'class="badge hook-shadow"' in html
    assert _total(html, "would_block") == 2
    assert _total(html, "allowed") == 1  # the ls call its matcher (Bash) matched
    assert _total(html, "blocked") == 0
    link = re.search(r'data-kind="would_block"><a href="([^"]*)"', html).group(1)
    query = parse_qs(urlsplit(link.replace("&amp;", "&")).query)
    assert query["hook"] == [hook.key] and query["outcome"] == ["warned"]


@pytest.mark.django_db
def test_an_enforced_hook_counts_blocks_and_hides_the_would_have_columns(admin_client, sre):
    hook = add_hook(sre, "PreToolUse", {**BLOCK_RM_RF, "name": "No rm -rf"})
    _send(sre, RM)
    html = admin_client.get(_url(hook)).content.decode()
    assert _total(html, "blocked") == 1
    assert 'data-kind="would_block"' not in html


@pytest.mark.django_db
def test_calls_the_matcher_does_not_match_are_not_counted(admin_client, sre):
    hook = add_hook(sre, "PreToolUse", {**BLOCK_RM_RF, "matcher": "Edit", "name": "Edits"})
    _send(sre, LS)
    html = admin_client.get(_url(hook)).content.decode()
    assert _total(html, "allowed") == 0


@pytest.mark.django_db
def test_the_page_lists_the_revisions_of_its_scope_marking_its_own(admin_client, sre):
    hook = add_hook(sre, "PreToolUse", {**BLOCK_RM_RF, "name": "No rm -rf"})
    agent_services.hook_set_enabled(actor=None, hook=hook, enabled=False)
    html = admin_client.get(_url(hook)).content.decode()
    section = html.split('id="hook-revisions"')[1]
    assert section.count('class="names-hook"') == 2
    assert "Disabled PreToolUse hook “No rm -rf”" in section
    assert 'class="badge disabled">disabled' in html


@pytest.mark.django_db
def test_the_hook_list_links_each_name_to_its_page(admin_client, sre):
    hook = add_hook(sre, "PreToolUse", {**BLOCK_RM_RF, "name": "No rm -rf"})
    html = admin_client.get("/agents/sre-agent/").content.decode()
    assert f'<a href="{_url(hook)}"><strong>No rm -rf</strong></a>' in html


@pytest.mark.django_db
def test_a_hook_of_another_agent_is_404_and_people_without_admin_get_403(
    admin_client, sre, other, auditor_client
):
    hook = add_hook(other, "PreToolUse", BLOCK_RM_RF)
    assert admin_client.get(f"/agents/sre-agent/hooks/{hook.key}/overview/").status_code == 404
    assert auditor_client.get(_url(hook)).status_code == 403


@pytest.mark.django_db
def test_the_hook_filter_accepts_the_name_case_insensitively(auditor_client, sre):
    hook = add_hook(sre, "PreToolUse", {**BLOCK_RM_RF, "name": "No rm -rf"})
    _send(sre, RM)
    by_key = auditor_client.get("/api/v1/records", {"hook": hook.key}).json()["results"]
    by_name = auditor_client.get("/api/v1/records", {"hook": "NO RM -RF"}).json()["results"]
    assert len(by_key) == 1 and by_name == by_key
    assert auditor_client.get("/api/v1/records", {"hook": "nothing"}).json()["results"] == []
    page = auditor_client.get("/audit/", {"hook": "no rm -rf"}).content.decode()
    assert f'title="{hook.key}">No rm -rf</a>' in page
