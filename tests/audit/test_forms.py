"""The audit pages' filter forms parse the query string and nothing more: every filter the
selector knows, stripped, empty ones dropped, bad values left for the selector to name."""

from __future__ import annotations

import pytest
from django.http import QueryDict

from audit.forms import EventFilterForm, RecordFilterForm
from audit.selectors import GOVERNANCE_FILTERS, RECORD_FILTERS


def test_each_form_has_a_field_for_every_filter_of_its_selector():
    assert sorted(RecordFilterForm.base_fields) == sorted(RECORD_FILTERS)
    assert sorted(EventFilterForm.base_fields) == sorted(GOVERNANCE_FILTERS)


def test_filters_are_stripped_without_empty_ones_in_the_selectors_order():
    form = RecordFilterForm(QueryDict("until=2026-02-01&agent=%20sre%20&q=%20&cursor=abc"))
    assert list(form.filters.items()) == [("agent", "sre"), ("until", "2026-02-01")]


def test_a_bad_value_is_kept_for_the_selector_to_refuse():
    form = RecordFilterForm(QueryDict("outcome=bogus&since=yesterday"))
    assert form.filters == {"outcome": "bogus", "since": "yesterday"}
    assert form["outcome"].value() == "bogus"


@pytest.mark.parametrize(("query", "is_open"), [("hook=hk_1", True), ("agent=sre", False)])
def test_more_filters_open_when_one_of_them_is_set(query, is_open):
    assert RecordFilterForm(QueryDict(query)).advanced_open is is_open


@pytest.mark.django_db
def test_fields_carry_what_the_template_draws():
    form = RecordFilterForm(QueryDict("outcome=denied"))
    outcome, hook = form["outcome"], form["hook"]
    assert (outcome.kind, outcome.label, outcome.advanced) == ("choice", "Outcome", False)
    assert ("denied", "Denied") in outcome.choices
    assert (hook.kind, hook.placeholder, hook.advanced, hook.choices) == (
        "text",
        "name or hk_…",
        True,
        (),
    )
