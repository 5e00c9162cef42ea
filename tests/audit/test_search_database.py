"""Where the record search and export read: `search_database()` is the read replica when
DATABASE_REPLICA_URL configures one (settings: DATABASES["replica"]), else the primary; the
export's own COPY connection takes the address and psycopg options of that alias. The real
replica is exercised end to end in tests/e2e/test_read_replica.py."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from django.db import connections

from audit import export
from audit.selectors import REPLICA, records_filter, records_search, search_database

pytestmark = pytest.mark.django_db


def _with_replica(settings: Any) -> None:
    databases = copy.deepcopy(settings.DATABASES)
    databases[REPLICA] = {**databases["default"], "TEST": {"MIRROR": "default"}}
    settings.DATABASES = databases


def test_without_a_replica_search_reads_the_primary(audrey):
    assert search_database() == "default"
    assert records_search({}, user=audrey).db == "default"


# Only aliases are compared here: nothing connects to the added alias.
@pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")
def test_with_a_replica_search_reads_it_and_the_filter_still_reads_the_primary(settings, audrey):
    _with_replica(settings)
    assert search_database() == REPLICA
    assert records_search({"agent": "sre-agent"}, user=audrey).db == REPLICA
    # Everything else that filters records (saved views, sessions) stays on the primary.
    assert records_filter({"agent": "sre-agent"}, user=audrey).db == "default"


def test_the_export_connection_takes_the_aliases_psycopg_options(monkeypatch):
    settings_dict = connections["default"].settings_dict
    options = {**(settings_dict.get("OPTIONS") or {}), "sslmode": "prefer", "pool": {"x": 1}}
    monkeypatch.setitem(settings_dict, "OPTIONS", options)
    info = export._conninfo("default")
    assert info["dbname"] == settings_dict["NAME"]
    assert info["sslmode"] == "prefer"
    assert "pool" not in info
