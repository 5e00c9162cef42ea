"""console.prepared: a queryset compiled once answers exactly as the queryset does, one query
per call, and a build whose SQL would not be the same for every call is refused."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured
from django.db import connection, transaction
from django.db.models import CharField, DateTimeField, IntegerField
from django.db.transaction import TransactionManagementError
from django.utils import timezone

from console.prepared import PreparedQuery
from console.roles import group_names_subquery

pytestmark = pytest.mark.django_db


def _with_groups(user_id: int):
    return User.objects.filter(pk=user_id).annotate(group_names=group_names_subquery())[:1]


def test_rows_match_the_queryset_call_after_call(alice, rita, audrey):
    prepared = PreparedQuery(User, _with_groups, user_id=IntegerField())
    for user in (alice, rita, audrey, alice):
        got = prepared.first(user_id=user.pk)
        want = _with_groups(user.pk).get()
        assert (got.pk, got.username, got.group_names) == (want.pk, want.username, want.group_names)
        assert got.date_joined == want.date_joined  # converters applied
    assert prepared.first(user_id=10**9) is None


def test_one_query_per_call(alice, django_assert_num_queries):
    prepared = PreparedQuery(User, _with_groups, user_id=IntegerField())
    prepared.first(user_id=alice.pk)
    with django_assert_num_queries(1):
        prepared.first(user_id=alice.pk)


def test_several_arguments_and_flat_values(alice, rita):
    since = timezone.now() - timedelta(days=1)

    def names(username: str, joined_after):
        rows = User.objects.filter(username=username, date_joined__gt=joined_after)
        return rows.order_by("username").values_list("username", flat=True)

    prepared = PreparedQuery(User, names, username=CharField(), joined_after=DateTimeField())
    assert prepared(username="rita", joined_after=since) == list(names("rita", since)) == ["rita"]
    assert prepared(username="alice", joined_after=since) == ["alice"]
    assert prepared(username="alice", joined_after=timezone.now() + timedelta(days=1)) == []


def test_an_argument_the_lookup_transforms_is_refused(alice):
    """`startswith` binds 'ali%', which is not the argument as its field prepares it."""
    prepared = PreparedQuery(
        User, lambda prefix: User.objects.filter(username__startswith=prefix), prefix=CharField()
    )
    with pytest.raises(ImproperlyConfigured, match="no declared argument"):
        prepared(prefix="ali")


def test_a_build_whose_sql_depends_on_an_argument_is_refused(alice):
    prepared = PreparedQuery(User, lambda n: User.objects.order_by("pk")[:n], n=IntegerField())
    with pytest.raises(ImproperlyConfigured, match="SQL depends"):
        prepared(n=3)


def test_a_build_that_reads_the_clock_is_refused(alice):
    def build(user_id: int):
        return User.objects.filter(pk=user_id, date_joined__lt=timezone.now())[:1]

    with pytest.raises(ImproperlyConfigured, match="clock"):
        PreparedQuery(User, build, user_id=IntegerField()).first(user_id=alice.pk)


def test_arguments_must_be_used_and_given(alice):
    unused = PreparedQuery(
        User,
        lambda user_id, other: _with_groups(user_id),
        user_id=IntegerField(),
        other=IntegerField(),
    )
    with pytest.raises(ImproperlyConfigured, match="not in the SQL"):
        unused.first(user_id=alice.pk, other=1)
    prepared = PreparedQuery(User, _with_groups, user_id=IntegerField())
    with pytest.raises(TypeError, match="user_id"):
        prepared.first(pk=alice.pk)


@pytest.mark.django_db(transaction=True)
def test_a_locking_read_runs_only_inside_a_transaction():
    alice = User.objects.create_user("alice-lock")
    locked = PreparedQuery(
        User,
        lambda user_id: User.objects.select_for_update().filter(pk=user_id)[:1],
        user_id=IntegerField(),
    )
    with transaction.atomic():
        assert locked.first(user_id=alice.pk) == alice  # compiled here
    if not connection.features.has_select_for_update:
        return  # SQLite: no row locks, and Django lets the query run anywhere
    with pytest.raises(TransactionManagementError):
        locked.first(user_id=alice.pk)


def _server_statements(marker: str) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [statement for (statement,) in cursor.fetchall() if marker in statement]


def _active_but_not(user_id: int):
    """A constant parameter (a string with a percent sign) beside the argument."""
    return User.objects.filter(pk=user_id, is_active=True).exclude(username="100% prepared")[:1]


@pytest.mark.postgresql
def test_postgresql_prepares_it_once_with_the_constants_written_in(alice, rita):
    prepared = PreparedQuery(User, _active_but_not, user_id=IntegerField())
    assert prepared.first(user_id=alice.pk) == alice
    assert prepared.first(user_id=rita.pk) == rita
    assert prepared.first(user_id=10**9) is None
    (statement,) = _server_statements("100% prepared")
    assert "'100% prepared'" in statement
    assert "$1" in statement and "$2" not in statement


@pytest.mark.postgresql
def test_a_connection_without_prepared_statements_runs_it_as_any_query(alice, monkeypatch):
    """What console.settings gives behind a transaction pooler (prepare_threshold=None)."""
    connection.ensure_connection()
    monkeypatch.setattr(connection.connection, "prepare_threshold", None)
    prepared = PreparedQuery(User, _active_but_not, user_id=IntegerField())
    assert prepared.first(user_id=alice.pk) == alice
    assert _server_statements("100% prepared") == []


@pytest.mark.postgresql
@pytest.mark.django_db(transaction=True)
def test_after_a_rollback_it_is_prepared_again():
    """psycopg deallocates its statements on a rollback; the next call prepares anew."""
    bob = User.objects.create_user("bob-prepared")
    prepared = PreparedQuery(User, _active_but_not, user_id=IntegerField())
    assert prepared.first(user_id=bob.pk) == bob
    with pytest.raises(RuntimeError), transaction.atomic():
        assert prepared.first(user_id=bob.pk) == bob
        raise RuntimeError("roll back")
    assert prepared.first(user_id=bob.pk) == bob
    assert len(_server_statements("100% prepared")) == 1
