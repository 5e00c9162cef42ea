"""Querysets compiled to SQL once per process: the few hot reads of the approvals live paths.

Django builds and compiles a queryset's SQL again on every call. For the reads that run on
every push and every long-poll wake-up (a reviewer socket's access re-check, the pushed row,
the long-poll's re-read) that costs several times the query itself: 1–2 ms of Python against
0.2–0.4 ms in PostgreSQL (docs/benchmarks.md, "Eighth pass of issue 14").

A PreparedQuery builds its queryset from placeholder arguments once per database alias,
compiles it twice with different placeholders and checks that only the parameters changed
(the SQL text may not depend on an argument), and finds which parameter is which argument.
A call then binds the arguments (prepared for the database as their declared fields prepare
them) into the compiled SQL and lets Django's own iterable turn the rows into objects, so
select_related, annotations and converters behave exactly as with the queryset itself.
The build must not read the clock or anything else that changes between calls: pass it in.

On PostgreSQL the statement is also prepared on the server, so that PostgreSQL parses and
plans it once per database session instead of on every call (0.3–0.4 ms of a 0.6–1.2 ms read,
docs/benchmarks.md, "Ninth pass"). Parameters that are the same in every call (a status, a
separator) are written into the SQL as literals, so the plan PostgreSQL keeps for the
statement still sees them, as it sees them in an unprepared query. The connection must allow
prepared statements (psycopg's `prepare_threshold` not None: console.settings leaves them off
behind a transaction pooler, where a later transaction may run on another server session);
otherwise the query runs as any other.
"""

from __future__ import annotations

import functools
import re
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import connections, models, router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import QuerySet
from django.db.transaction import TransactionManagementError


def _placeholder(field: models.Field[Any, Any], index: int, variant: int) -> Any:
    """A value for argument `index` that no other argument (or constant) takes."""
    if isinstance(field, models.UUIDField):
        return uuid.uuid4()
    if isinstance(field, models.DateTimeField):
        return datetime(2001, 2, 3, tzinfo=UTC) + timedelta(seconds=97 * index + variant + 1)
    if isinstance(field, models.IntegerField):
        return 1_987_650_000 + 10 * index + variant
    if isinstance(field, models.CharField | models.TextField):
        return f"prepared-query-argument-{index}-{variant}-{uuid.uuid4().hex}"
    raise ImproperlyConfigured(f"PreparedQuery: no placeholder for a {type(field).__name__}")


def _shallow_copy[T](template: T) -> T:
    """A new object sharing `template`'s attributes. Not copy.copy: a QuerySet's pickling
    hook, which copy.copy calls, would run the template's query and cache its rows."""
    copied: T = object.__new__(type(template))
    copied.__dict__.update(template.__dict__)
    return copied


def _with_constants_written_in(
    sql: str, slots: list[tuple[str | None, Any]]
) -> tuple[str, list[tuple[str | None, Any]]]:
    """PostgreSQL: the SQL with each constant parameter (str, int, bool) as a literal, and the
    slots that remain parameters."""
    from psycopg.sql import quote

    remaining = iter(slots)
    kept: list[tuple[str | None, Any]] = []
    pieces: list[str] = []
    # Django's SQL marks a parameter `%s` and a literal percent sign `%%`.
    for piece in re.split(r"(%%|%s)", sql):
        if piece != "%s":
            pieces.append(piece)
            continue
        name, constant = slot = next(remaining)
        if name is None and isinstance(constant, str | int):
            pieces.append(quote(constant).replace("%", "%%"))
        else:
            pieces.append(piece)
            kept.append(slot)
    return "".join(pieces), kept


class _PreparingConnection:
    """A Django connection whose cursors prepare each statement on the server, where the
    psycopg connection allows prepared statements; the compiler's only view of it."""

    def __init__(self, connection: BaseDatabaseWrapper) -> None:
        self._connection = connection

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)

    def cursor(self) -> Any:
        wrapper = self._connection.cursor()
        client = wrapper.cursor
        if client.connection.prepare_threshold is not None:
            wrapper.cursor = _preparing_cursor()(client.connection)
            client.close()
        return wrapper


@functools.cache
def _preparing_cursor() -> type[Any]:
    """Django's server-binding psycopg cursor, asking psycopg to prepare every statement."""
    from django.db.backends.postgresql.base import ServerBindingCursor

    class PreparingCursor(ServerBindingCursor):
        def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
            return super().execute(query, params, prepare=True)  # type: ignore[misc]

    return PreparingCursor


@dataclass(frozen=True)
class _Compiled:
    queryset: QuerySet[Any]
    compiler: Any
    sql: str
    # Per parameter: the argument it takes, or (None, the constant) when it is the same in
    # every call.
    slots: tuple[tuple[str | None, Any], ...]
    prepares: bool


class PreparedQuery[M: models.Model, R]:
    """`build(**arguments)` → a queryset of `model` (sliced, ordered: as it will run),
    compiled once per database alias (the model's read alias).

    `arguments` names each argument's field, which prepares its value for the database.
    Call it with the same keywords for the list of rows; `first()` for one row or None.
    """

    def __init__(
        self,
        model: type[M],
        build: Callable[..., QuerySet[M, R]],
        **arguments: models.Field[Any, Any],
    ) -> None:
        self.model = model
        self.build = build
        self.arguments = arguments
        self._compiled: dict[str, _Compiled] = {}
        self._lock = threading.Lock()

    def _compile(self, alias: str) -> _Compiled:
        connection = connections[alias]
        runs = []
        for variant in (0, 1):
            values = {
                name: _placeholder(field, index, variant)
                for index, (name, field) in enumerate(self.arguments.items())
            }
            queryset = self.build(**values).using(alias)
            if queryset.model is not self.model:
                raise ImproperlyConfigured("PreparedQuery: the build returns another model's rows")
            compiler = queryset.query.get_compiler(using=alias)
            sql, params = compiler.as_sql()
            runs.append((queryset, compiler, sql, tuple(params), values))
        (queryset, compiler, sql, params, values), (_, _, sql_b, params_b, values_b) = runs
        if sql != sql_b or len(params) != len(params_b):
            raise ImproperlyConfigured("PreparedQuery: the SQL depends on an argument's value")

        def prepared(name: str, value: Any) -> Any:
            return self.arguments[name].get_db_prep_value(value, connection)

        slots: list[tuple[str | None, Any]] = []
        for a, b in zip(params, params_b, strict=True):
            if a == b:
                slots.append((None, a))
                continue
            names = [
                name
                for name in self.arguments
                if prepared(name, values[name]) == a and prepared(name, values_b[name]) == b
            ]
            if len(names) != 1:
                raise ImproperlyConfigured(
                    f"PreparedQuery: a parameter ({a!r}) is no declared argument as its field "
                    "prepares it (or a value that changes between calls, such as the clock)"
                )
            slots.append((names[0], None))
        unused = set(self.arguments) - {name for name, _ in slots}
        if unused:
            raise ImproperlyConfigured(f"PreparedQuery: arguments not in the SQL: {sorted(unused)}")
        prepares = connection.vendor == "postgresql"
        if prepares:
            sql, slots = _with_constants_written_in(sql, slots)
        return _Compiled(
            queryset=queryset, compiler=compiler, sql=sql, slots=tuple(slots), prepares=prepares
        )

    def _queryset(self, arguments: dict[str, Any]) -> QuerySet[M, R]:
        if arguments.keys() != self.arguments.keys():
            raise TypeError(f"PreparedQuery takes exactly {sorted(self.arguments)}")
        alias = router.db_for_read(self.model)
        compiled = self._compiled.get(alias)
        if compiled is None:
            with self._lock:
                compiled = self._compiled.get(alias) or self._compile(alias)
                self._compiled[alias] = compiled
        connection = connections[alias]
        locks = compiled.queryset.query.select_for_update
        if locks and connection.features.has_select_for_update and connection.get_autocommit():
            # What the compiler would say: the lock would end with the statement.
            raise TransactionManagementError(
                "select_for_update cannot be used outside of a transaction."
            )
        params = tuple(
            constant
            if name is None
            else self.arguments[name].get_db_prep_value(arguments[name], connection)
            for name, constant in compiled.slots
        )
        compiler = _shallow_copy(compiled.compiler)
        compiler.connection = _PreparingConnection(connection) if compiled.prepares else connection
        compiler.as_sql = lambda *_args, **_kwargs: (compiled.sql, params)
        # The template stays unevaluated, its query untouched. `_query`, not the `query`
        # setter, which would change a values_list queryset's iterable.
        query = _shallow_copy(compiled.queryset.query)
        query.get_compiler = lambda *_args, **_kwargs: compiler  # type: ignore[method-assign]
        queryset = _shallow_copy(compiled.queryset)
        queryset._query = query  # type: ignore[attr-defined]
        return queryset

    def __call__(self, **arguments: Any) -> list[R]:
        return list(self._queryset(arguments))

    def first(self, **arguments: Any) -> R | None:
        rows = self(**arguments)
        return rows[0] if rows else None
