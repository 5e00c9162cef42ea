"""Tests reach only loopback: every name lookup and every connect of the test process
(threads too, such as the embedded default's task sender) is checked.

- A loopback address or `localhost` passes.
- A name reserved for examples and tests (RFC 2606 and 6761: `.example`, `.invalid`,
  `.test`, `example.com` ...) fails as an unknown name would, on every machine alike,
  without asking a resolver.
- Any other name, and a connect to any other address, is refused with OSError and recorded;
  the test that was running fails at teardown, naming the host and the thread
  (tests/conftest.py). A numeric address is not looked up, so only its connect is checked.

Processes a test starts (servers, browsers, the real clients) are outside this check: they
get loopback addresses from the test, and the real clients run in a namespace with only
loopback.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from typing import Any

RESERVED_SUFFIXES = (".example", ".invalid", ".test", ".localhost")
RESERVED_DOMAINS = ("example.com", "example.net", "example.org")
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain"})

_refused: list[str] = []
_lock = threading.Lock()
_real_getaddrinfo = socket.getaddrinfo
_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _is_numeric(host: str) -> bool:
    """Whether the resolver reads `host` as an address without a lookup (`127.1`,
    `2130706433` and `0x7f.1` too)."""
    try:
        _real_getaddrinfo(host, None, flags=socket.AI_NUMERICHOST)
    except (socket.gaierror, UnicodeError):
        return False
    return True


def _reserved(name: str) -> bool:
    name = name.rstrip(".").lower()
    return name.endswith(RESERVED_SUFFIXES) or any(
        name == domain or name.endswith("." + domain) for domain in RESERVED_DOMAINS
    )


def _refuse(what: str) -> OSError:
    entry = f"{what} (thread {threading.current_thread().name})"
    with _lock:
        _refused.append(entry)
    return OSError(f"tests reach only loopback: {what}")


def _getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    if isinstance(host, bytes):
        host = host.decode("idna")
    if not isinstance(host, str) or host.lower() in LOOPBACK_NAMES or _is_numeric(host):
        return _real_getaddrinfo(host, *args, **kwargs)
    if _reserved(host):
        raise socket.gaierror(socket.EAI_NONAME, f"{host} is reserved for examples and tests")
    raise _refuse(f"lookup of {host}")


def _check_connect(sock: socket.socket, address: Any) -> None:
    """Refuses an IP connect beyond loopback (Unix sockets and the like pass)."""
    if sock.family not in (socket.AF_INET, socket.AF_INET6) or not isinstance(address, tuple):
        return
    host = str(address[0]).split("%", 1)[0]
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name: socket.connect looks it up itself
        loopback = host.lower() in LOOPBACK_NAMES
    if not loopback:
        raise _refuse(f"connect to {address[0]} port {address[1]}")


def _connect(self: socket.socket, address: Any) -> None:
    _check_connect(self, address)
    return _real_connect(self, address)


def _connect_ex(self: socket.socket, address: Any) -> int:
    _check_connect(self, address)
    return _real_connect_ex(self, address)


def install() -> None:
    """Patch this process's socket module; idempotent."""
    socket.getaddrinfo = _getaddrinfo
    socket.socket.connect = _connect  # type: ignore[method-assign,assignment]
    socket.socket.connect_ex = _connect_ex  # type: ignore[method-assign,assignment]


def take_since(mark: int) -> list[str]:
    """What was refused since `mark`, removed from the record."""
    with _lock:
        taken = _refused[mark:]
        del _refused[mark:]
    return taken


def mark() -> int:
    with _lock:
        return len(_refused)
