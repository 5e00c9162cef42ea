"""Every index of the project's tables earns its place (issue 14): none is a column prefix of
another index on the same table, which would answer every query it answers. Such an index
costs every insert, and on PostgreSQL it is worse than redundant: on a table the planner has
no statistics for yet (a new deployment, a test database, autovacuum behind) it ties with
the longer unique index and wins, and a look-up by both columns then scans every row of
the leading value. The escalation identity look-up on each new escalation did exactly that
(docs/benchmarks.md, tenth pass)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.apps import apps
from django.conf import settings
from django.db import connection
from django.utils import timezone

from agents.models import RuntimeSession
from approvals.models import Escalation
from tests.conftest import AgentWithToken

pytestmark = pytest.mark.django_db


def _indexes(table: str) -> dict[str, tuple[list[str], bool]]:
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, table)
    return {
        name: (info["columns"], bool(info["unique"]))
        for name, info in constraints.items()
        if (info["index"] or info["unique"]) and info["columns"] and not info["foreign_key"]
    }


def _project_tables() -> set[str]:
    """The tables of the apps in this repository (not of Django's or a dependency's)."""
    return {
        model._meta.db_table
        for config in apps.get_app_configs()
        if Path(config.path).is_relative_to(settings.BASE_DIR)
        and "site-packages" not in Path(config.path).parts
        for model in config.get_models()
        if model._meta.managed
    }


def test_no_index_is_a_column_prefix_of_another() -> None:
    tables = _project_tables()
    redundant = []
    for table in sorted(tables):
        indexes = _indexes(table)
        for name, (columns, unique) in indexes.items():
            if unique or name.endswith("_like"):  # a constraint, or LIKE's operator class
                continue
            redundant += [
                f"{table}.{name} {columns} is a prefix of {other} {longer}"
                for other, (longer, _) in indexes.items()
                if other != name and len(longer) > len(columns)
                and longer[: len(columns)] == columns
            ]  # fmt: skip
    assert tables >= {"approvals_escalation", "audit_governanceevent", "agents_hook"}
    assert redundant == []


def _without_statistics(table: str) -> None:
    """The planner's view of a table nobody has analyzed (rolled back with the test)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        if not cursor.fetchone()[0]:
            pytest.skip("forgetting a table's statistics needs a PostgreSQL superuser")
        cursor.execute("DELETE FROM pg_statistic WHERE starelid = %s::regclass", [table])
        cursor.execute(
            "UPDATE pg_class SET reltuples = -1, relpages = 0 WHERE oid = %s::regclass", [table]
        )


@pytest.mark.postgresql
def test_an_escalation_identity_is_looked_up_by_its_unique_index(sre: AgentWithToken) -> None:
    expires = timezone.now() + timedelta(hours=1)
    Escalation.objects.bulk_create(
        Escalation(
            agent=sre.agent,
            context_identity=f"identity-{n}",
            interception_point="pre_tool_call",
            approvals_required=1,
            expires_at=expires,
        )
        for n in range(300)
    )
    _without_statistics("approvals_escalation")
    lookup = Escalation.objects.filter(agent_id=sre.agent.pk, context_identity="identity-7")
    plan = lookup[:1].explain()
    assert "escalation_unique_identity_per_agent" in plan, plan


@pytest.mark.postgresql
def test_a_runtime_session_is_looked_up_by_its_unique_index(sre: AgentWithToken) -> None:
    RuntimeSession.objects.bulk_create(
        RuntimeSession(agent=sre.agent, runtime="claude-code", session_id=f"s-{n}")
        for n in range(300)
    )
    _without_statistics("agents_runtimesession")
    plan = RuntimeSession.objects.filter(agent=sre.agent, session_id="s-7").explain()
    assert "runtime_session_unique_per_agent" in plan, plan
