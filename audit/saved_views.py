"""Saved views of the record explorer: an auditor's named filters (services and reads).

A saved view is the explorer's query string under a name, per user: opening it is opening
`/audit/?<query>`, so a shared link and a saved view are the same thing and a relative
`range` stays relative. The query is cleaned to the record filters (no cursor, no limit)
and checked with the one filter implementation before it is stored; names are unique per
user, case-insensitively; a user keeps at most SAVED_VIEWS_PER_USER views.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.db import IntegrityError, transaction
from django.http import Http404, QueryDict
from django.urls import reverse

from audit.models import SAVED_VIEWS_PER_USER, SavedView
from audit.selectors import clean_filters, records_filter
from console.errors import Conflict, InvalidInput, pointer
from console.roles import is_auditor

NAME_MAX = 80
QUERY_MAX = 2000


def saved_views_for_user(user: Any) -> list[SavedView]:
    """The user's saved views by name (none for people who read no records)."""
    if not is_auditor(user):
        return []
    return list(SavedView.objects.filter(owner=user).order_by("name", "id"))


def get_saved_view_for_user(user: Any, pk: Any) -> SavedView:
    """One of the user's own saved views, or Http404 (someone else's is not found)."""
    try:
        key = int(pk)
    except (TypeError, ValueError):
        raise Http404("No such saved view.") from None
    view = SavedView.objects.filter(pk=key, owner=user).first() if is_auditor(user) else None
    if view is None:
        raise Http404("No such saved view.")
    return view


def saved_view_url(view: SavedView) -> str:
    path = reverse("audit:records")
    return f"{path}?{view.query}" if view.query else path


def clean_query(raw: str) -> str:
    """The record filters of a query string, in filter order: what a saved view stores."""
    return urlencode(clean_filters(QueryDict(raw.lstrip("?"))))


def saved_view_create(*, owner: Any, name: str, query: str) -> SavedView:
    """Save `query` (a query string of the explorer) as `name` for `owner`.

    InvalidInput names `/name` (empty, too long) or `/query` (too long, or a filter the
    explorer refuses, with that filter's message), Conflict names `/name` when the owner
    already has a view of that name, InvalidInput `/name` when they have
    SAVED_VIEWS_PER_USER views."""
    name = (name or "").strip()
    if not name:
        raise InvalidInput("Name the view.", fields={pointer("name"): ["Name the view."]})
    if len(name) > NAME_MAX:
        message = f"At most {NAME_MAX} characters."
        raise InvalidInput(message, fields={pointer("name"): [message]})
    if len(query or "") > QUERY_MAX:
        message = f"The filter is longer than {QUERY_MAX} characters."
        raise InvalidInput(message, fields={pointer("query"): [message]})
    cleaned = clean_query(query or "")
    try:
        records_filter(QueryDict(cleaned), user=owner)
    except InvalidInput as exc:
        reasons = [f"{at[1:]}: {' '.join(why)}" for at, why in exc.fields.items()]
        raise InvalidInput(
            f"The filter is not valid: {exc.message}", fields={pointer("query"): reasons}
        ) from None
    with transaction.atomic():
        if SavedView.objects.filter(owner=owner).count() >= SAVED_VIEWS_PER_USER:
            message = f"You already have {SAVED_VIEWS_PER_USER} saved views; delete one first."
            raise InvalidInput(message, fields={pointer("name"): [message]})
        if SavedView.objects.filter(owner=owner, name__iexact=name).exists():
            message = f"You already have a view named {name!r}."
            raise Conflict(message, fields={pointer("name"): [message]})
        try:
            with transaction.atomic():
                return SavedView.objects.create(owner=owner, name=name, query=cleaned)
        except IntegrityError:  # a concurrent save of the same name
            message = f"You already have a view named {name!r}."
            raise Conflict(message, fields={pointer("name"): [message]}) from None


def saved_view_delete(*, owner: Any, pk: Any) -> None:
    get_saved_view_for_user(owner, pk).delete()
