"""Outbound HTTP to addresses people type in (agent webhooks).

A webhook URL is http(s) and its host resolves only to public addresses: loopback, private,
link-local, multicast, reserved, unspecified, shared (100.64/10) and other non-global
addresses are refused, also when written another way (`2130706433`, `::ffff:127.0.0.1`).
This holds at save time (the settings form names the field) and again at every send: the
host is resolved anew, every address checked, and the connection goes to an address just
checked (the URL's host is kept for `Host` and TLS), so a name that later resolves elsewhere
(DNS rebinding) is caught. Redirects are never followed. `CONSOLE_WEBHOOK_ALLOW_PRIVATE=1`
lifts the address rule, for a receiver on the console's own network.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

import httpx
from django.conf import settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
SCHEMES = ("http", "https")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_KINDS = (
    ("is_unspecified", "an unspecified"),
    ("is_loopback", "a loopback"),
    ("is_link_local", "a link-local"),
    ("is_multicast", "a multicast"),
    ("is_reserved", "a reserved"),
    ("is_private", "a private"),
)
ALLOW_HINT = "webhooks go only to public addresses (CONSOLE_WEBHOOK_ALLOW_PRIVATE=1 allows others)"


class OutboundRefused(Exception):
    """The destination is not one the console may send to; never retried."""


def address_problem(address: IPAddress) -> str | None:
    """What kind of non-public address `address` is ("a loopback address"), or None."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and address.teredo:
            embedded = address.teredo[1]
        if embedded is None and address in _NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None and (problem := address_problem(embedded)):
            return problem
    for attribute, kind in _KINDS:
        if getattr(address, attribute):
            return f"{kind} address"
    return None if address.is_global else "not a globally routable address"


def allow_private() -> bool:
    return bool(settings.CONSOLE_WEBHOOK_ALLOW_PRIVATE)


def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address `host` resolves to, in the resolver's order; OSError when none."""
    found: list[IPAddress] = []
    for *_, sockaddr in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in found:
            found.append(address)
    return found


def _parse(url: str) -> tuple[httpx.URL, str, int] | str:
    """(url, ASCII host, port), or what is wrong with the URL."""
    try:
        target = httpx.URL(url)
    except httpx.InvalidURL:
        return "This is not a valid URL."
    if target.scheme not in SCHEMES:
        return "The URL must start with http:// or https://."
    if not target.raw_host:
        return "The URL has no host."
    port = target.port or (443 if target.scheme == "https" else 80)
    return target, target.raw_host.decode("ascii"), port


def _refusals(host: str, addresses: list[IPAddress]) -> list[str]:
    return [
        f"{host} is {problem} ({address}); {ALLOW_HINT}."
        if str(address) == host
        else f"{host} resolves to {address}, {problem}; {ALLOW_HINT}."
        for address in addresses
        if (problem := address_problem(address))
    ]


def webhook_url_problems(url: str) -> list[str]:
    """Save time: what is wrong with `url` as a webhook destination (empty: nothing).

    A name that does not resolve now is accepted: every send resolves and checks again.
    """
    parsed = _parse(url)
    if isinstance(parsed, str):
        return [parsed]
    _target, host, port = parsed
    if allow_private():
        return []
    try:
        addresses = resolve(host, port)
    except (OSError, UnicodeError):
        return []
    return _refusals(host, addresses)


def post_json(url: str, body: Any, *, timeout: float) -> httpx.Response:
    """POST `body` as JSON to `url`, connecting only to addresses checked just now, following
    no redirect. OutboundRefused for a refused destination; httpx errors otherwise."""
    parsed = _parse(url)
    if isinstance(parsed, str):
        raise OutboundRefused(parsed)
    target, host, port = parsed
    try:
        addresses = resolve(host, port)
    except (OSError, UnicodeError) as exc:
        raise httpx.ConnectError(f"Cannot resolve {host}: {exc}") from exc
    if not allow_private() and (refusals := _refusals(host, addresses)):
        raise OutboundRefused(refusals[0])
    headers = {"Host": target.netloc.decode("ascii")}
    extensions = {"sni_hostname": host} if target.scheme == "https" else {}
    failure: httpx.ConnectError | None = None
    with httpx.Client(timeout=timeout, follow_redirects=False) as client:
        for address in addresses:
            try:
                return client.post(
                    target.copy_with(host=str(address)),
                    json=body,
                    headers=headers,
                    extensions=extensions,
                )
            except httpx.ConnectError as exc:  # as the resolver's order is tried by sockets
                failure = exc
    assert failure is not None  # resolve() returned at least one address
    raise failure
