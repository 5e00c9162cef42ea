"""Portal lists that grow are paginated (?page=N, plain links, no script needed): agents,
custom agents, a scope's hooks, revision history and tokens; row actions keep their page,
and the number of queries does not grow with the rows."""

from __future__ import annotations

import re

import pytest

from agents import services
from agents.models import Agent, AgentToken, ConfigRevision, CustomAgent, Hook
from agents.selectors import PAGE_SIZE
from agents.validation import hook_with_defaults

pytestmark = pytest.mark.django_db


def _rows(html: str, marker: str) -> int:
    return html.count(marker)


def _pager(html: str) -> str:
    match = re.search(r'<nav class="row pager".*?</nav>', html, re.S)
    assert match, "a pager is shown"
    return match.group(0)


def _hooks(agent: Agent, event: str, count: int, custom_agent: CustomAgent | None = None) -> None:
    raw = {"type": "command", "command": "true"} | ({} if event == "Stop" else {"matcher": "*"})
    Hook.objects.bulk_create(
        Hook(
            agent=agent,
            custom_agent=custom_agent,
            event=event,
            position=index,
            name=f"{event} {index}",
            definition=hook_with_defaults(raw, event),
        )
        for index in range(count)
    )


def test_agents_list_is_paginated(admin_client):
    Agent.objects.bulk_create(Agent(slug=f"agent-{index:03}") for index in range(PAGE_SIZE + 5))
    first = admin_client.get("/agents/").content.decode()
    assert _rows(first, 'data-label="Slug"') == PAGE_SIZE
    assert 'href="?page=2"' in _pager(first) and "agent-000" in first
    second = admin_client.get("/agents/?page=2").content.decode()
    assert _rows(second, 'data-label="Slug"') == 5 and "agent-054" in second


def test_custom_agents_list_is_paginated_with_few_queries(
    admin_client, sre, django_assert_max_num_queries
):
    CustomAgent.objects.bulk_create(
        CustomAgent(agent=sre.agent, name=f"ca-{index:03}") for index in range(PAGE_SIZE + 10)
    )
    with django_assert_max_num_queries(12):
        first = admin_client.get("/agents/sre-agent/custom/").content.decode()
    assert _rows(first, 'data-label="Hooks"') == PAGE_SIZE
    assert "page 1 of 2" in _pager(first)
    second = admin_client.get("/agents/sre-agent/custom/?page=2").content.decode()
    assert _rows(second, 'data-label="Hooks"') == 10 and "ca-059" in second
    # Past the end: the last page, not an error.
    assert admin_client.get("/agents/sre-agent/custom/?page=99").status_code == 200


def test_hooks_are_paginated_across_events_keeping_their_order(
    admin_client, sre, django_assert_max_num_queries
):
    _hooks(sre.agent, "Stop", PAGE_SIZE + 10)
    _hooks(sre.agent, "PostToolUse", 5)
    # The health strip reads the whole scope's hooks and the recent records: two more.
    with django_assert_max_num_queries(12):
        first = admin_client.get("/agents/sre-agent/").content.decode()
    assert _rows(first, 'class="hook-row') == PAGE_SIZE
    assert f'<h3>Stop <span class="badge neutral">{PAGE_SIZE + 10}</span>' in first
    assert "5 PostToolUse hooks on other pages" in first
    second = admin_client.get("/agents/sre-agent/?page=2").content.decode()
    assert _rows(second, 'class="hook-row') == 15
    assert f'data-label="Order">{PAGE_SIZE + 1}<' in second
    assert f'data-label="Order">{PAGE_SIZE + 10}<' in second


def test_a_row_action_on_page_two_stays_on_page_two(admin_client, sre):
    _hooks(sre.agent, "Stop", PAGE_SIZE + 3)
    hook = Hook.objects.get(agent=sre.agent, position=PAGE_SIZE + 1)
    url = f"/agents/sre-agent/hooks/{hook.key}/move/"
    swapped = admin_client.post(url, {"direction": "up", "page": "2"}, HTTP_HX_REQUEST="true")
    html = swapped.content.decode()
    assert html.lstrip().startswith('<div id="hooks"')
    assert "page 2 of 2" in html and _rows(html, 'class="hook-row') == 3
    row = html[html.index(f'id="hook-{hook.key}"') :].split("</tr>", 1)[0]
    assert f'data-label="Order">{PAGE_SIZE + 1}<' in row  # was {PAGE_SIZE + 2}
    plain = admin_client.post(url, {"direction": "down", "page": "2"})
    assert plain.status_code == 302 and plain.url == "/agents/sre-agent/?page=2"


def test_custom_agent_hooks_are_paginated(admin_client, sre):
    custom_agent = services.custom_agent_create(actor=None, agent=sre.agent, name="busy")
    _hooks(sre.agent, "PreToolUse", PAGE_SIZE + 1, custom_agent=custom_agent)
    first = admin_client.get("/agents/sre-agent/custom/busy/").content.decode()
    assert _rows(first, 'class="hook-row') == PAGE_SIZE and "page 1 of 2" in _pager(first)


def test_history_is_paginated_and_only_the_newest_is_current(admin_client, sre):
    ConfigRevision.objects.bulk_create(
        ConfigRevision(
            agent=sre.agent,
            scope=ConfigRevision.Scope.AGENT,
            number=index + 2,
            action="hooks.replaced",
            summary=f"change {index}",
            snapshot={"mode": "enforce", "hooks": {}},
            actor_label="system",
        )
        for index in range(PAGE_SIZE + 10)
    )
    first = admin_client.get("/agents/sre-agent/history/").content.decode()
    assert _rows(first, 'id="revision-') == PAGE_SIZE and first.count(">current<") == 1
    assert "page 1 of 2" in _pager(first)
    second = admin_client.get("/agents/sre-agent/history/?page=2").content.decode()
    assert _rows(second, 'id="revision-') == 11  # 10 + agent.created
    assert ">current<" not in second and _rows(second, "Roll back…</button>") == 11


def test_tokens_are_paginated_and_revoke_keeps_the_page(admin_client, sre):
    AgentToken.objects.bulk_create(
        AgentToken(agent=sre.agent, name=f"t{index}", prefix=f"agt_x{index:03}", digest="x")
        for index in range(PAGE_SIZE + 5)
    )
    first = admin_client.get("/agents/sre-agent/tokens/").content.decode()
    assert _rows(first, 'data-label="Prefix"') == PAGE_SIZE and "page 1 of 2" in _pager(first)
    token = AgentToken.objects.get(agent=sre.agent, name="test")  # the oldest: on page 2
    url = f"/agents/sre-agent/tokens/{token.pk}/revoke/"
    swapped = admin_client.post(url, {"page": "2"}, HTTP_HX_REQUEST="true").content.decode()
    assert "page 2 of 2" in swapped and _rows(swapped, 'data-label="Prefix"') == 6
