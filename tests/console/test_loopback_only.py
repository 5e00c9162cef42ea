"""The suite's own guard (tests/loopback_only.py): a test that looks up or connects beyond
loopback is refused and recorded, in any thread; loopback and reserved names are not."""

from __future__ import annotations

import socket
import threading

import httpx
import pytest

from tests import loopback_only


def test_a_real_name_is_refused_and_recorded_in_any_thread():
    mark = loopback_only.mark()
    errors: list[BaseException] = []

    def send() -> None:
        try:
            httpx.post("https://hooks.slack.com/actions/T0/1/x", json={}, timeout=2)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=send, name="sender")
    thread.start()
    thread.join(timeout=10)
    assert errors and "tests reach only loopback" in str(errors[0])
    assert loopback_only.take_since(mark) == ["lookup of hooks.slack.com (thread sender)"]


@pytest.mark.parametrize("address", ["192.0.2.1", "2001:db8::1", "10.0.0.5"])
def test_a_connect_beyond_loopback_is_refused_before_any_packet(address):
    mark = loopback_only.mark()
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock, pytest.raises(OSError) as refused:
        sock.connect((address, 443))
    assert "tests reach only loopback" in str(refused.value)
    [entry] = loopback_only.take_since(mark)
    assert entry.startswith(f"connect to {address} port 443")


@pytest.mark.parametrize("name", ["hooks.example.com", "evil.example", "x.invalid", "a.test"])
def test_reserved_names_fail_as_unknown_without_being_recorded(name):
    mark = loopback_only.mark()
    with pytest.raises(socket.gaierror):
        socket.getaddrinfo(name, 443)
    assert loopback_only.take_since(mark) == []


def test_loopback_passes():
    mark = loopback_only.mark()
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        port = server.getsockname()[1]
        for host in ("127.0.0.1", "localhost", "2130706433"):
            with socket.create_connection((host, port), timeout=2):
                pass
    assert loopback_only.take_since(mark) == []
