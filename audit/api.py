"""Record API: ingest for agent tokens, search and export for auditors.

POST /api/v1/records          agent token → 202 {"accepted", "duplicates"}
POST /api/v1/records/dead-letters  agent token → 202 {"accepted", "duplicates"}
GET  /api/v1/records          auditor/admin → {"results": [...], "next": url|null}
GET  /api/v1/records/export   auditor/admin → streamed CSV or JSON Lines
GET  /api/v1/records/export/{id}/manifest  auditor/admin → rows, bytes, SHA-256 of that export
GET  /api/v1/governance-events/export  auditor/admin → streamed CSV or JSON Lines
"""

from __future__ import annotations

import datetime as dt
from typing import Any
from urllib.parse import urlencode
from uuid import UUID

import orjson
import psycopg
from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.db import InterfaceError, OperationalError
from django.http import HttpResponseBase, StreamingHttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agents.auth import principal_agent
from audit import export, governance_export, services
from audit.dead_letters import report_rows
from audit.governance_selectors import governance_events_filter
from audit.ingest import batch_items, body_needs_string_check
from audit.openapi import (
    DEAD_LETTER_REPORTS,
    RECORD_BATCH,
    RECORDS_EXAMPLE,
    ExportManifestSerializer,
    IngestAnswerSerializer,
    RecordPageSerializer,
)
from audit.selectors import (
    GOVERNANCE_FILTERS,
    RECORD_FILTERS,
    clean_filters,
    describe_filters,
    parse_limit,
    record_export_for_user,
    records_page,
    records_search,
)
from console import embedded
from console.actors import request_actor
from console.auth import IsAgent, IsAuditor
from console.errors import InvalidInput, Unavailable, UnsupportedMediaType, pointer
from console.openapi import errors
from console.parsers import ensure_storable, json_loads

RETRY_AFTER_SECONDS = 5
REPLICA_NOTE = (
    "Read from the console's read replica when it has one (DATABASE_REPLICA_URL, a streaming "
    "replica): a record stored in the last moments may not be in the answer yet."
)
FILTER_PARAMS = [OpenApiParameter(name, str) for name in RECORD_FILTERS]


class _FormatBlindNegotiation(DefaultContentNegotiation):
    """`?format=` names the export format here, not a DRF renderer."""

    def select_renderer(self, request: Any, renderers: Any, format_suffix: Any = None) -> Any:
        return renderers[0], renderers[0].media_type


def _parse_json(raw: bytes) -> Any:
    """orjson first (fast); what it refuses (lone surrogates, integers past 64 bits, numbers
    past a double's range) goes through the console's bounded parser, so the field is named."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    try:
        # Text is checked with the batch (every bad string named); numbers here.
        return ensure_storable(json_loads(raw), check_text=False)
    except ValueError as exc:
        raise InvalidInput(f"Malformed JSON: {exc}", code="malformed") from None


def _refuse_unknown(request: Request, names: tuple[str, ...]) -> None:
    unknown = sorted(set(request.query_params) - set(names))
    if unknown:
        allowed = ", ".join(names)
        raise InvalidInput(
            f"Unknown filter {unknown[0]!r}; use: {allowed}.",
            fields={pointer(name): ["Unknown filter."] for name in unknown},
        )


def _export_format(request: Request) -> str:
    fmt = request.query_params.get("format") or "csv"
    if fmt not in export.FORMATS:
        message = f"{fmt!r} is not one of: {', '.join(export.FORMATS)}."
        raise InvalidInput(f"Bad filter 'format': {message}", fields={"/format": [message]})
    return fmt


def _filtered(request: Request, extra: tuple[str, ...]) -> Any:
    _refuse_unknown(request, (*RECORD_FILTERS, *extra))
    return records_search(request.query_params, user=request.user)


class _RecordsView(APIView):
    content_negotiation_class = _FormatBlindNegotiation

    def handle_exception(self, exc: Exception) -> Response:
        # Includes failures inside token authentication: no 2xx, no 500, for a down DB.
        if isinstance(
            exc,
            OperationalError | InterfaceError | psycopg.OperationalError | Unavailable,
        ):
            exc = Unavailable(
                "The record store is unavailable right now; nothing was stored. Retry later.",
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            )
        return super().handle_exception(exc)


class RecordsApi(_RecordsView):
    def get_permissions(self) -> list[Any]:
        return [IsAgent()] if self.request.method == "POST" else [IsAuditor()]

    @extend_schema(
        request=RECORD_BATCH,
        responses={202: IngestAnswerSerializer, **errors(400, 503)},
        description="A JSON array (1-1000) of {record, meta}; all stored or none.",
        examples=[RECORDS_EXAMPLE],
    )
    def post(self, request: Request) -> Response:
        if not (request.content_type or "").startswith("application/json"):
            raise UnsupportedMediaType("Send the batch as application/json.")
        raw: bytes = request.body
        items = batch_items(_parse_json(raw), check_strings=body_needs_string_check(raw))
        agent = principal_agent(request.user)
        result = services.records_ingest(actor=request_actor(request), agent=agent, items=items)
        return Response(
            {"accepted": result.accepted, "duplicates": result.duplicates},
            status=status.HTTP_202_ACCEPTED,
        )

    @extend_schema(
        parameters=[
            *FILTER_PARAMS,
            OpenApiParameter("cursor", str),
            OpenApiParameter("limit", int),
        ],
        responses={200: RecordPageSerializer, **errors(400, 503)},
        description=REPLICA_NOTE,
    )
    def get(self, request: Request) -> Response:
        qs = _filtered(request, ("cursor", "limit"))
        limit = parse_limit(request.query_params.get("limit"))
        page = records_page(qs, request.query_params.get("cursor"), limit)
        next_url = None
        if page.next_cursor:
            query = {**clean_filters(request.query_params), "limit": limit}
            query["cursor"] = page.next_cursor
            next_url = request.build_absolute_uri(f"{request.path}?{urlencode(query)}")
        results = [export.record_as_dict(record) for record in page.items]
        return Response({"results": results, "next": next_url})


class RecordDeadLettersApi(_RecordsView):
    permission_classes = [IsAgent]

    @extend_schema(
        request=DEAD_LETTER_REPORTS,
        responses={202: IngestAnswerSerializer, **errors(400, 503)},
        description="Record batches this console refused and the agent kept in its "
        "dead-letter file: counted and shown on the agent's page. Idempotent on batch.",
    )
    def post(self, request: Request) -> Response:
        if not (request.content_type or "").startswith("application/json"):
            raise UnsupportedMediaType("Send the reports as application/json.")
        reports = report_rows(_parse_json(request.body))
        agent = principal_agent(request.user)
        result = services.dead_letters_report(
            actor=request_actor(request), agent=agent, reports=reports
        )
        return Response(
            {"accepted": result.accepted, "duplicates": result.duplicates},
            status=status.HTTP_202_ACCEPTED,
        )


def _export_content(
    request: Request, qs: Any, fmt: str, statement: str | None, export_id: UUID
) -> Any:
    """The body iterator, async under ASGI and sync under WSGI: COPY `statement` or,
    without one (not PostgreSQL), the portable path. Each records the manifest when it ends."""

    def finish(manifest: export.Manifest) -> None:
        services.records_export_complete(
            export_id=export_id, rows=manifest.rows, size=manifest.size, sha256=manifest.sha256
        )

    asgi = isinstance(request._request, ASGIRequest)
    if statement is None:
        return (export.astream_python if asgi else export.stream_python)(qs, fmt, finish)
    if asgi:
        return export.astream_copy(statement, fmt, sync_to_async(finish), using=qs.db)
    return export.stream_copy(statement, fmt, finish, using=qs.db)


class RecordsExportApi(_RecordsView):
    permission_classes = [IsAuditor]

    @extend_schema(
        parameters=[*FILTER_PARAMS, OpenApiParameter("format", str, enum=list(export.FORMATS))],
        responses={
            (200, "text/csv"): OpenApiTypes.STR,
            (200, "application/x-ndjson"): OpenApiTypes.STR,
            **errors(400, 503),
        },
        description=(
            "RFC 4180 CSV (header line, then one record per CRLF row) or JSON Lines (one "
            "record per line). Headers: X-Export-Id, X-Export-Filter (the filter as a query "
            "string), X-Export-Generated-At, X-Export-Manifest (URL of the manifest: rows, "
            "bytes and SHA-256 of exactly this body, to detect a truncated download). "
            + REPLICA_NOTE
        ),
    )
    def get(self, request: Request) -> HttpResponseBase:
        fmt = _export_format(request)
        qs = _filtered(request, ("format",))
        filters = clean_filters(request.query_params)
        # Compiled before anything is written or sent: a bad value fails here, not mid-stream.
        statement = export.copy_statement(qs, fmt) if embedded.database_is_postgresql() else None
        record = services.records_export_record(
            actor=request_actor(request),
            filters=filters,
            fmt=fmt,
            summary=describe_filters(filters),
        )
        content = _export_content(request, qs, fmt, statement, record.pk)
        response = StreamingHttpResponse(content, content_type=export.MEDIA_TYPES[fmt])
        at = record.generated_at.astimezone(dt.UTC)
        manifest = request.build_absolute_uri(
            reverse("api-records-export-manifest", args=[record.pk])
        )
        response["Content-Disposition"] = (
            f'attachment; filename="records-{at:%Y%m%dT%H%M%SZ}.{fmt}"'
        )
        response["X-Export-Id"] = str(record.pk)
        response["X-Export-Filter"] = urlencode(filters)
        response["X-Export-Generated-At"] = export.iso(at)
        response["X-Export-Manifest"] = manifest
        response["Link"] = f'<{manifest}>; rel="describedby"'
        return response


class RecordsExportManifestApi(_RecordsView):
    permission_classes = [IsAuditor]

    @extend_schema(responses={200: ExportManifestSerializer, **errors(404, 503)})
    def get(self, request: Request, export_id: UUID) -> Response:
        record = record_export_for_user(request.user, export_id)
        complete = record.completed_at is not None
        return Response(
            {
                "id": str(record.pk),
                "format": record.format,
                "filter": record.filter,
                "generated_at": export.iso(record.generated_at),
                "complete": complete,
                "completed_at": export.iso(record.completed_at),
                "rows": record.rows,
                "bytes": record.size,
                "sha256": record.sha256 or None,
            }
        )


class GovernanceEventsExportApi(_RecordsView):
    permission_classes = [IsAuditor]

    @extend_schema(
        parameters=[
            *(OpenApiParameter(name, str) for name in GOVERNANCE_FILTERS),
            OpenApiParameter("format", str, enum=list(export.FORMATS)),
        ],
        responses={
            (200, "text/csv"): OpenApiTypes.STR,
            (200, "application/x-ndjson"): OpenApiTypes.STR,
            **errors(400, 503),
        },
        description=(
            "The governance events the events search shows for the same filter (action: "
            "exact or a prefix ending in '.'; actor; agent; q; since; until), oldest first: "
            "RFC 4180 CSV (header line, formula-safe text cells, before/after/changes as "
            "JSON) or JSON Lines. The export is itself a governance event (written first, "
            "not part of the file)."
        ),
    )
    def get(self, request: Request) -> HttpResponseBase:
        fmt = _export_format(request)
        _refuse_unknown(request, (*GOVERNANCE_FILTERS, "format"))
        qs = governance_events_filter(request.query_params, user=request.user)
        filters = clean_filters(request.query_params, GOVERNANCE_FILTERS)
        event = services.governance_events_export_record(
            actor=request_actor(request),
            filters=filters,
            fmt=fmt,
            summary=describe_filters(filters, GOVERNANCE_FILTERS),
        )
        # The log as it stood when the export began: not its own event, nor later ones.
        qs = qs.filter(pk__lt=event.pk)
        content = (
            governance_export.astream(qs, fmt)
            if isinstance(request._request, ASGIRequest)
            else governance_export.stream(qs, fmt)
        )
        response = StreamingHttpResponse(content, content_type=export.MEDIA_TYPES[fmt])
        at = event.at.astimezone(dt.UTC)
        response["Content-Disposition"] = (
            f'attachment; filename="governance-events-{at:%Y%m%dT%H%M%SZ}.{fmt}"'
        )
        response["X-Export-Filter"] = urlencode(filters)
        response["X-Export-Generated-At"] = export.iso(at)
        return response
