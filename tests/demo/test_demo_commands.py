"""The demo of `make run` (demo/): the commands `make run` names exist, the seeds run twice
without storing anything twice, and the audit seed goes through the real ingest and chain."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command, get_commands

from agents.models import Agent, CustomAgent, Hook
from approvals.models import Escalation
from audit.models import InterceptionRecord, RecordSeal

ROOT = Path(__file__).resolve().parents[2]


def test_every_command_make_run_starts_is_there():
    recipe = (ROOT / "Makefile").read_text().split("\nrun:", 1)[1].split("\n\n", 1)[0]
    named = set(re.findall(r"manage\.py (\w+)", recipe))
    source = (ROOT / "console/management/commands/run_console.py").read_text()
    named |= set(re.findall(r'"manage\.py", "(\w+)"', source))
    assert named >= {"seed_demo", "run_console", "run_demo_agents"}
    commands = get_commands()
    assert named - set(commands) == set()
    assert commands["run_demo_agents"] == commands["run_demo_agent"] == "demo"
    assert commands["seed_demo"] == commands["seed_audit_demo"] == "demo"


@pytest.mark.django_db
def test_seed_demo_twice_gives_the_same_demo():
    for _ in range(2):
        out = io.StringIO()
        call_command("seed_demo", stdout=out)
        assert "Demo ready." in out.getvalue()
    assert sorted(User.objects.values_list("username", flat=True)) == [
        "admin",
        "auditor",
        "reviewer",
    ]
    agent = Agent.objects.get(slug="sre-agent")
    assert set(
        Hook.objects.filter(agent=agent, custom_agent=None).values_list("event", flat=True)
    ) == {
        "PostToolUse",
        "PreToolUse",
        "Stop",
    }
    assert CustomAgent.objects.filter(agent=agent, name="my_hooked_agent").count() == 1


@pytest.mark.django_db
def test_seed_audit_demo_stores_sealed_history_once():
    call_command("seed_audit_demo", sessions=4, days=2, stdout=io.StringIO())
    stored = InterceptionRecord.objects.count()
    escalations = Escalation.objects.count()
    assert stored > 0
    assert RecordSeal.objects.count() == stored  # sealed now, not by a worker later
    assert Agent.objects.filter(slug__in=["billing-agent", "support-agent"]).count() == 2

    out = io.StringIO()
    call_command("seed_audit_demo", sessions=4, days=2, stdout=out)
    assert InterceptionRecord.objects.count() == stored
    assert Escalation.objects.count() == escalations
    assert "0 records stored" in out.getvalue()
