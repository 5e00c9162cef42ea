"""console.async_middleware: in the async views' chain Django's middleware hooks run on the
event loop, except those that do I/O (a session save, a message stored in the session),
which still take a thread: Django refuses database access on the loop, so a hook that ran
there by mistake fails these tests."""

from __future__ import annotations

import threading

import pytest
from django.contrib.messages.storage.session import SessionStorage
from django.contrib.sessions.models import Session
from django.http import HttpResponse
from django.test import AsyncRequestFactory

from console import async_middleware

pytestmark = pytest.mark.django_db(transaction=True)


def _recording(calls: list[str], body=None):
    async def view(request):
        calls.append("view")
        if body is not None:
            body(request)
        return HttpResponse("ok")

    return view


@pytest.mark.asyncio
async def test_pure_hooks_run_on_the_event_loop():
    seen: list[int] = []

    class Watched(async_middleware.XFrameOptionsMiddleware):
        def process_response(self, request, response):
            seen.append(threading.get_ident())
            return super().process_response(request, response)

    middleware = Watched(_recording([]))
    response = await middleware(AsyncRequestFactory().get("/"))
    assert response["X-Frame-Options"] == "DENY"
    assert seen == [threading.get_ident()]


@pytest.mark.asyncio
async def test_a_modified_session_is_saved_from_a_thread():
    def modify(request):
        request.session["k"] = "v"

    chain = async_middleware.SessionMiddleware(_recording([], modify))
    response = await chain(AsyncRequestFactory().get("/"))
    key = response.cookies["sessionid"].value
    assert await Session.objects.filter(session_key=key).aexists()


@pytest.mark.asyncio
async def test_an_untouched_session_is_not_saved_and_sets_no_cookie():
    calls: list[str] = []
    chain = async_middleware.SessionMiddleware(_recording(calls))
    response = await chain(AsyncRequestFactory().get("/"))
    assert calls == ["view"] and "sessionid" not in response.cookies
    assert await Session.objects.acount() == 0


@pytest.mark.asyncio
async def test_a_message_kept_in_the_session_is_stored_from_a_thread(settings):
    settings.MESSAGE_STORAGE = "django.contrib.messages.storage.session.SessionStorage"

    def add(request):
        assert isinstance(request._messages, SessionStorage)
        request._messages.add(20, "saved")

    chain = async_middleware.SessionMiddleware(
        async_middleware.MessageMiddleware(_recording([], add))
    )
    response = await chain(AsyncRequestFactory().get("/"))
    session = await Session.objects.aget(session_key=response.cookies["sessionid"].value)
    assert "saved" in str(session.get_decoded())


@pytest.mark.asyncio
async def test_static_files_are_served_and_other_requests_pass_on(tmp_path):
    (tmp_path / "app.css").write_text("body{}")
    calls: list[str] = []
    middleware = async_middleware.StaticFilesMiddleware(_recording(calls))
    middleware.add_files(str(tmp_path), prefix="/static/")
    served = await middleware(AsyncRequestFactory().get("/static/app.css"))
    assert served.status_code == 200 and calls == []
    assert b"".join(served.streaming_content) == b"body{}"
    passed = await middleware(AsyncRequestFactory().get("/api/v1/escalations"))
    assert passed.content == b"ok" and calls == ["view"]


def test_the_deploy_check_accepts_subclasses_and_misses_nothing(settings):
    assert async_middleware.middleware_check() == []
    settings.MIDDLEWARE = [
        path.replace("console.async_middleware.", "django.middleware.security.")
        if path.endswith(".SecurityMiddleware")
        else path
        for path in settings.MIDDLEWARE
        if not path.endswith(".CsrfViewMiddleware")
    ]
    assert "django.middleware.security.SecurityMiddleware" in settings.MIDDLEWARE
    assert [error.id for error in async_middleware.middleware_check()] == ["console.E003"]
