"""Reads of the audit app: the ONE record filter, keyset pages, governance-event search.

The search API, the export and the /audit/ pages all go through these functions, so a
filter means the same thing everywhere. Typical use in a view:

    try:
        qs = records_filter(request.GET, user=request.user)
        page = records_page(qs, request.GET.get("cursor"), limit=50)
    except InvalidInput as exc:         # exc.fields names the bad filter: {"/since": [why]}
        ...show a 400 / form error naming it...
    page.items         # list[InterceptionRecord], newest first, `seal` already joined
    page.next_cursor   # str to pass back as ?cursor=…, or None on the last page

Filters (query-string names, all optional, empty values ignored, unknown names ignored so
pages can carry their own parameters): agent (slug), custom_agent, session_id,
interception_point, decision (allow|deny|transform), outcome (allowed|warned|denied|
transformed|approved|rejected|expired|host_error, or several comma-separated: any of them),
hook (hook key, or a hook's name: case-insensitive, the records of every hook of that
name), hook_prefix (the records of every configured hook whose name, or key, starts with
it, case-insensitive), tool_name (exact), tool_prefix (tool names starting with it,
case-insensitive), framework, mode (enforce|evaluate_only), q (reason text,
case-insensitive substring), reason (the exact reason code), decided_hook (the exact key
of the hook that decided), since, until (ISO 8601; a date alone means its midnight UTC;
since is inclusive, until exclusive), range (15m|1h|24h|7d|30d: since = that long before
the request, resolved when the request arrives, so a shared link keeps meaning "the last
24 h"; `all` = no bound; not together with since/until).

The record search (API and explorer) and the export call `records_search`: the same filter,
read from `search_database()`, the read replica when DATABASE_REPLICA_URL configures one.
Everything that must see its own writes (ingest's duplicate check, the sealer, approvals, a
record's own page, saved-view validation) reads the primary through `records_filter`.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import functools
import operator
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS
from django.db.models import Count, Max, Min, Q, QuerySet, Sum
from django.db.models.functions import Lower
from django.http import Http404
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from agents.models import Agent, Mode
from agents.selectors import hook_keys_matching, hook_keys_with_prefix
from audit.models import (
    ChainVerification,
    DeadLetterReport,
    Decision,
    InterceptionPoint,
    InterceptionRecord,
    Outcome,
    RecordExport,
)
from console.errors import InvalidInput, pointer
from console.roles import is_auditor

RECORD_FILTERS: tuple[str, ...] = (
    "agent",
    "custom_agent",
    "session_id",
    "interception_point",
    "decision",
    "outcome",
    "hook",
    "tool_name",
    "mode",
    "q",
    "reason",
    "decided_hook",
    "since",
    "until",
    "range",
    "tool_prefix",
    "hook_prefix",
    "framework",
)
GOVERNANCE_FILTERS: tuple[str, ...] = ("action", "actor", "agent", "q", "since", "until")

# Choices a filter accepts, for validation here and for <select> options on the pages.
FILTER_CHOICES: dict[str, list[tuple[str, str]]] = {
    "interception_point": list(InterceptionPoint.choices),
    "decision": list(Decision.choices),
    "outcome": list(Outcome.choices),
    "mode": list(Mode.choices),
}
# `range=`: the relative periods (resolved at request time), and `all` (no bound).
RELATIVE_RANGES: dict[str, dt.timedelta] = {
    "15m": dt.timedelta(minutes=15),
    "1h": dt.timedelta(hours=1),
    "24h": dt.timedelta(hours=24),
    "7d": dt.timedelta(days=7),
    "30d": dt.timedelta(days=30),
}
ALL_TIME = "all"
# At most this many configured hooks stand for one `hook_prefix` (one array overlap).
HOOK_PREFIX_KEYS = 500
SESSIONS_LIMIT = 50
BLOCKED = (Outcome.DENIED, Outcome.REJECTED, Outcome.EXPIRED, Outcome.HOST_ERROR)
MAX_PAGE_SIZE = 500
DEFAULT_PAGE_SIZE = 50
MAX_FILTER_LENGTH = 200
MAX_ID = 2**63 - 1  # ids are bigint


def filter_error(name: str, message: str) -> InvalidInput:
    """A filter (or cursor/limit) value is not acceptable: the error naming parameter `name`."""
    return InvalidInput(f"Bad filter {name!r}: {message}", fields={pointer(name): [message]})


@dataclass(frozen=True)
class Page[T]:
    items: list[T]
    next_cursor: str | None


def records_visible_to(user: Any) -> QuerySet[InterceptionRecord]:
    """Records a caller may read: everything for auditors and admins, nothing otherwise
    (reviewers, people without a role and agent tokens read no records)."""
    if is_auditor(user):
        return InterceptionRecord.objects.all()
    return InterceptionRecord.objects.none()


def parse_instant(name: str, raw: str) -> dt.datetime:
    """ISO 8601 datetime (or a bare date = midnight UTC) as an aware UTC datetime, or
    InvalidInput naming `name`. Naive datetimes are taken as UTC. The one parser of the
    since/until filters of records and governance events (API, export and pages)."""
    value = raw.strip()
    parsed: dt.datetime | None
    try:
        parsed = parse_datetime(value.replace("Z", "+00:00") if value.endswith("Z") else value)
    except ValueError:
        parsed = None
    if parsed is None:
        try:
            day = parse_date(value)
        except ValueError:
            day = None
        if day is None:
            raise filter_error(name, f"{raw!r} is not an ISO 8601 date or datetime.")
        parsed = dt.datetime.combine(day, dt.time.min)
    if timezone.is_naive(parsed):
        parsed = parsed.replace(tzinfo=dt.UTC)
    return _as_utc(name, raw, parsed)


def _as_utc(name: str, raw: str, value: dt.datetime) -> dt.datetime:
    """`value` in UTC, or InvalidInput when that falls outside years 1-9999 (e.g.
    0001-01-01T00:00:00+14:00): Python cannot represent it, so neither can a query."""
    try:
        return value.astimezone(dt.UTC)
    except OverflowError:
        raise filter_error(name, f"{raw!r} is out of range (years 1-9999 in UTC).") from None


def _choice(name: str, value: str) -> str:
    allowed = [key for key, _label in FILTER_CHOICES[name]]
    if value not in allowed:
        raise filter_error(name, f"{value!r} is not one of: {', '.join(allowed)}.")
    return value


def clean_filters(
    params: Mapping[str, Any], names: tuple[str, ...] = RECORD_FILTERS
) -> dict[str, str]:
    """The known, non-empty filters of `params` (a QueryDict or dict), stripped; used for
    shareable URLs, `next` links and the export header. Validates nothing."""
    cleaned: dict[str, str] = {}
    for name in names:
        raw = params.get(name)
        if raw is None:
            continue
        value = str(raw).strip()
        if value:
            cleaned[name] = value
    return cleaned


def describe_filters(params: Mapping[str, Any], names: tuple[str, ...] = RECORD_FILTERS) -> str:
    """`agent=sre outcome=denied` (or `(no filter)`), for headers and page titles."""
    cleaned = clean_filters(params, names)
    return " ".join(f"{k}={v}" for k, v in cleaned.items()) or "(no filter)"


def time_bounds(
    filters: Mapping[str, str], *, now: dt.datetime | None = None
) -> tuple[dt.datetime | None, dt.datetime | None]:
    """The (since, until) a cleaned filter means: `range` resolved against `now` (the
    request's time), else the parsed since/until. InvalidInput names a bad value, a range
    given together with since/until, or an until not after since."""
    if "range" in filters:
        name = filters["range"]
        if name != ALL_TIME and name not in RELATIVE_RANGES:
            allowed = ", ".join([*RELATIVE_RANGES, ALL_TIME])
            raise filter_error("range", f"{name!r} is not one of: {allowed}.")
        if "since" in filters or "until" in filters:
            raise filter_error("range", "give either range or since/until, not both.")
        if name == ALL_TIME:
            return None, None
        return (now or timezone.now()) - RELATIVE_RANGES[name], None
    since = parse_instant("since", filters["since"]) if "since" in filters else None
    until = parse_instant("until", filters["until"]) if "until" in filters else None
    if since is not None and until is not None and until <= since:
        raise filter_error("until", "must be later than since.")
    return since, until


def records_filter(
    params: Mapping[str, Any], *, user: Any, now: dt.datetime | None = None
) -> QuerySet[InterceptionRecord]:
    """Records `user` may read that match the filters in `params`, newest first
    (ordered by -timestamp, -id, the keyset order `records_page` expects), with `agent`
    and `seal` joined. Raises InvalidInput naming the first bad filter value. `now` is
    the instant a `range` counts back from (the request's time by default)."""
    filters = clean_filters(params)
    qs = records_visible_to(user).select_related("agent", "seal")
    for name, value in filters.items():
        if len(value) > MAX_FILTER_LENGTH:
            raise filter_error(name, f"longer than {MAX_FILTER_LENGTH} characters.")
    if "agent" in filters:
        qs = qs.filter(agent__slug=filters["agent"])
    for name in ("custom_agent", "session_id", "tool_name", "framework"):
        if name in filters:
            qs = qs.filter(**{name: filters[name]})
    for name in ("interception_point", "decision", "mode"):
        if name in filters:
            qs = qs.filter(**{name: _choice(name, filters[name])})
    if "outcome" in filters:
        outcomes = [_choice("outcome", value.strip()) for value in filters["outcome"].split(",")]
        qs = (
            qs.filter(outcome__in=outcomes) if len(outcomes) > 1 else qs.filter(outcome=outcomes[0])
        )
    for name in ("reason", "decided_hook"):
        if name in filters:
            qs = qs.filter(**{name: filters[name]})
    if "hook" in filters:
        keys = hook_keys_matching(filters["hook"], agent_slug=filters.get("agent"))
        qs = qs.filter(functools.reduce(operator.or_, (Q(hook_ids__has=key) for key in keys)))
    if "hook_prefix" in filters:
        keys = hook_keys_with_prefix(
            filters["hook_prefix"], agent_slug=filters.get("agent"), limit=HOOK_PREFIX_KEYS
        )
        qs = qs.filter(hook_ids__has_any=keys) if keys else qs.none()
    if "tool_prefix" in filters:
        # lower(tool_name) LIKE 'pre%': the record_tool_lower index on PostgreSQL.
        qs = qs.alias(tool_lower=Lower("tool_name")).filter(
            tool_lower__startswith=filters["tool_prefix"].lower()
        )
    if "q" in filters:
        qs = qs.filter(reason__icontains=filters["q"])
    since, until = time_bounds(filters, now=now)
    if since is not None:
        qs = qs.filter(timestamp__gte=since)
    if until is not None:
        qs = qs.filter(timestamp__lt=until)
    return qs.order_by("-timestamp", "-id")


REPLICA = "replica"


def search_database() -> str:
    """The database alias the record search and export read: the read replica when one is
    configured (DATABASE_REPLICA_URL; a hot standby, so records stored in the last moments
    may not be found yet), else the primary."""
    return REPLICA if REPLICA in settings.DATABASES else DEFAULT_DB_ALIAS


def records_search(
    params: Mapping[str, Any], *, user: Any, now: dt.datetime | None = None
) -> QuerySet[InterceptionRecord]:
    """`records_filter` read from `search_database()`: the search API, the explorer and the
    export. Only reads: a write through this queryset fails on a hot standby."""
    return records_filter(params, user=user, now=now).using(search_database())


def parse_limit(raw: Any, *, default: int = DEFAULT_PAGE_SIZE, maximum: int = MAX_PAGE_SIZE) -> int:
    """`limit` query parameter: 1..maximum, or filter_error("limit", …)."""
    if raw is None or str(raw).strip() == "":
        return default
    try:
        value = int(str(raw))
    except ValueError:
        raise filter_error("limit", f"{raw!r} is not an integer.") from None
    if not 1 <= value <= maximum:
        raise filter_error("limit", f"must be between 1 and {maximum}.")
    return value


def encode_cursor(at: dt.datetime, pk: int) -> str:
    token = f"{at.astimezone(dt.UTC).isoformat()}|{pk}".encode()
    return base64.urlsafe_b64encode(token).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[dt.datetime, int]:
    """Inverse of encode_cursor; filter_error("cursor", …) on anything else."""
    forged = filter_error("cursor", "is not a cursor this server issued.")
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        at_raw, pk_raw = base64.urlsafe_b64decode(padded.encode()).decode().split("|")
        at = dt.datetime.fromisoformat(at_raw)
        pk = int(pk_raw)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise forged from None
    if timezone.is_naive(at) or not 0 < pk <= MAX_ID:
        raise forged
    try:
        return at.astimezone(dt.UTC), pk
    except OverflowError:
        raise forged from None


def keyset_page(qs: QuerySet[Any], cursor: str | None, limit: int, *, time_field: str) -> Page[Any]:
    """One page of `qs` (ordered by -time_field, -id) after `cursor`. Stable while new rows
    arrive: rows are addressed by (time, id), never by offset."""
    if cursor:
        at, pk = decode_cursor(cursor)
        qs = qs.filter(Q(**{f"{time_field}__lt": at}) | Q(**{time_field: at, "id__lt": pk}))
    rows = list(qs.order_by(f"-{time_field}", "-id")[: limit + 1])
    next_cursor = None
    if len(rows) > limit:
        rows = rows[:limit]
        last = rows[-1]
        next_cursor = encode_cursor(getattr(last, time_field), last.pk)
    return Page(items=rows, next_cursor=next_cursor)


def records_page(
    qs: QuerySet[InterceptionRecord], cursor: str | None, limit: int = DEFAULT_PAGE_SIZE
) -> Page[InterceptionRecord]:
    """Keyset page of a `records_filter` result: `.items` newest first, `.next_cursor`."""
    return keyset_page(qs, cursor, limit, time_field="timestamp")


def get_record_for_user(user: Any, pk: Any) -> InterceptionRecord:
    """One record for the detail page, or Http404 (also for callers who read no records)."""
    try:
        key = int(pk)
    except (TypeError, ValueError):
        raise Http404("No such record.") from None
    record = records_visible_to(user).select_related("agent", "seal").filter(pk=key).first()
    if record is None:
        raise Http404("No such record.")
    return record


def record_export_for_user(user: Any, pk: Any) -> RecordExport:
    """One export (for its manifest): any export for auditors and admins, who read every
    record and every governance event anyway; Http404 for anyone else or an unknown id."""
    export = RecordExport.objects.filter(pk=pk).first() if is_auditor(user) else None
    if export is None:
        raise Http404("No such export.")
    return export


def chain_verifications_visible_to(user: Any) -> QuerySet[ChainVerification]:
    """ "Verify chain" runs: auditors and admins see every run (newest first)."""
    if not is_auditor(user):
        return ChainVerification.objects.none()
    return ChainVerification.objects.order_by("-requested_at")


def get_chain_verification_for_user(user: Any, pk: Any) -> ChainVerification:
    verification = chain_verifications_visible_to(user).filter(pk=pk).first()
    if verification is None:
        raise Http404("No such verification.")
    return verification


def session_records(
    user: Any, session_id: str, *, agent_slug: str | None = None
) -> QuerySet[InterceptionRecord]:
    """All records of one hooks session in sequence order (the session timeline:
    agent_startup … agent_shutdown). Session ids are per agent; pass agent_slug to pin it."""
    qs = records_visible_to(user).select_related("agent", "seal").filter(session_id=session_id)
    if agent_slug:
        qs = qs.filter(agent__slug=agent_slug)
    return qs.order_by("sequence", "agent_id", "id")


def session_stored(agent: Any, session_id: str) -> bool:
    """Whether any record of this session of `agent` is stored."""
    return InterceptionRecord.objects.filter(agent=agent, session_id=session_id).exists()


def recent_sessions(qs: QuerySet[InterceptionRecord]) -> list[dict[str, Any]]:
    """Most recently active sessions of a filtered record set, one GROUP BY query: per
    (agent__slug, session_id) the first/last timestamp and sequence, counts, and `gaps`
    (the sequence numbers in the period are not contiguous)."""
    rows = (
        qs.order_by()
        .values("agent__slug", "session_id")
        .annotate(
            started=Min("timestamp"),
            ended=Max("timestamp"),
            records=Count("id"),
            blocked=Count("id", filter=Q(outcome__in=BLOCKED)),
            approved=Count("id", filter=Q(outcome=Outcome.APPROVED)),
            evaluate_only=Count("id", filter=Q(mode="evaluate_only")),
            shutdown=Count("id", filter=Q(interception_point=InterceptionPoint.AGENT_SHUTDOWN)),
            custom_agent=Max("custom_agent"),
            first_seq=Min("sequence"),
            last_seq=Max("sequence"),
        )
        .order_by("-ended", "session_id")[:SESSIONS_LIMIT]
    )
    result: list[dict[str, Any]] = []
    for aggregated in rows:
        row: dict[str, Any] = dict(aggregated)
        row["gaps"] = row["last_seq"] - row["first_seq"] + 1 != row["records"]
        result.append(row)
    return result


def agent_slugs() -> list[str]:
    """Every agent's slug, in order: the options of the pages' agent filters."""
    return list(Agent.objects.order_by("slug").values_list("slug", flat=True))


@dataclass(frozen=True)
class DeadLetterSummary:
    """What an agent reported of the record batches the console refused."""

    records: int
    batches: int
    last: DeadLetterReport


def dead_letter_summary(agent: Any) -> DeadLetterSummary | None:
    """Totals and the latest report for `agent`; None when it never reported one."""
    reports = DeadLetterReport.objects.filter(agent=agent)
    totals = reports.aggregate(records=Sum("records"), batches=Count("id"))
    last = reports.order_by("-refused_at", "-id").first() if totals["batches"] else None
    if last is None:
        return None
    return DeadLetterSummary(records=totals["records"], batches=totals["batches"], last=last)
