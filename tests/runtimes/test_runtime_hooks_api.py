"""POST /api/v1/hooks/{runtime}: a body the console cannot store (NUL or a lone surrogate in
a key, a number no one can use) is a 400 naming the field, never a 500, and nothing is
written."""

from __future__ import annotations

import pytest
from django.test import Client

from approvals.models import Escalation
from audit.models import InterceptionRecord
from tests.runtimes.runtime_support import post_hook

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("raw", "pointer"),
    [
        (b'{"hook_event_name": "BeforeTool", "k\\u0000": 1}', "/k\\u0000"),
        (b'{"hook_event_name": "BeforeTool", "\\ud80c": 1}', None),
        (b'{"hook_event_name": "BeforeTool", "n": ' + b"9" * 5000 + b"}", "/n"),
        (b'{"hook_event_name": "BeforeTool", "n": 1e999}', "/n"),
    ],
)
def test_a_body_that_cannot_be_stored_is_a_400_naming_the_field(sre, raw, pointer):
    response = post_hook(Client(), sre, "gemini-cli", None, raw=raw)
    assert response.status_code == 400, response.content[:300]
    fields = response.json()["error"]["fields"]
    assert fields, response.json()
    if pointer == "/n":
        assert "/n" in fields
    assert not InterceptionRecord.objects.exists()
    assert not Escalation.objects.exists()
