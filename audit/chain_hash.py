"""The definition of the chain's hash (audit.chain): which stored fields of a record, as
what canonical JSON, and how each seal links to the one before.

    chain_hash = sha256(chain_prev + canonical JSON of the record's stored fields)
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Mapping
from typing import Any

import orjson

# Every stored column of a record: changing any of them breaks its hash. Deliberately a
# literal, not derived from audit.record_fields: this list is part of the hash of every
# sealed record, so adding, removing or renaming a field here makes existing chains fail
# verification. Pinned by tests/audit/test_record_fields.py.
SEALED_FIELDS: tuple[str, ...] = (
    "id",
    "agent_id",
    "custom_agent",
    "session_id",
    "sequence",
    "interception_point",
    "mode",
    "decision",
    "outcome",
    "reason",
    "resolved_by",
    "decided_by",
    "decided_hook",
    "fold_truncated",
    "input_identity",
    "enforced_identity",
    "timestamp",
    "received_at",
    "hook_ids",
    "tool_name",
    "framework",
    "revision",
    "raw",
)


def _plain(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return value


def record_canonical(values: Mapping[str, Any]) -> bytes:
    """Canonical JSON of a record's stored fields: sorted keys, no spaces, UTF-8, i.e.
    `json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)` encoded
    as UTF-8 (orjson writes the same bytes, several times faster)."""
    return canonical_json({name: _plain(values[name]) for name in SEALED_FIELDS})


def canonical_json(document: dict[str, Any]) -> bytes:
    try:
        return orjson.dumps(document, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        # An integer past 64 bits (a big number in an open member of the verdict, or a
        # float like 1e300 that jsonb hands back as an integer): the definition itself.
        text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return text.encode("utf-8")


def chain_digest(prev_hash: str, values: Mapping[str, Any]) -> str:
    return hashlib.sha256(prev_hash.encode("ascii") + record_canonical(values)).hexdigest()


def chain_links(
    ids: list[int],
    canonical: Mapping[int, bytes],
    seq: int,
    prev: str,
) -> list[tuple[int, int, str, str]]:
    """(record id, chain_seq, chain_prev, chain_hash) of each id in order, from `seq`/`prev`,
    given each record's canonical JSON (ids whose record is gone, e.g. purged before it was
    sealed, are skipped)."""
    seals: list[tuple[int, int, str, str]] = []
    sha256 = hashlib.sha256
    for pk in ids:
        document = canonical.get(pk)
        if document is None:
            continue
        seq += 1
        digest = sha256(prev.encode("ascii") + document).hexdigest()
        seals.append((pk, seq, prev, digest))
        prev = digest
    return seals
