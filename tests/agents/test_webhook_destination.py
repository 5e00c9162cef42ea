"""An agent's webhook URL must reach a public address: loopback, private, link-local,
multicast, reserved and unspecified destinations (however written) are refused when the
settings are saved, naming the field, unless CONSOLE_WEBHOOK_ALLOW_PRIVATE is set.
(The send-time check, after a fresh DNS lookup, is in tests/approvals/test_notifications.py.)"""

from __future__ import annotations

import ipaddress

import pytest

from agents import services
from agents.models import Agent
from console.errors import InvalidInput
from console.governance.models import GovernanceEvent
from console.outbound import address_problem

pytestmark = pytest.mark.django_db

REFUSED = [
    "http://127.0.0.1:8080/hook",
    "http://localhost/hook",
    "http://10.1.2.3/hook",
    "http://172.16.0.9/hook",
    "http://192.168.1.1/hook",
    "http://169.254.169.254/latest/meta-data/",
    "http://100.64.0.1/hook",
    "http://0.0.0.0/hook",
    "http://224.0.0.1/hook",
    "http://240.0.0.1/hook",
    "http://[::1]/hook",
    "http://[fe80::1]/hook",
    "http://[fc00::1]/hook",
    "http://[ff02::1]/hook",
    "http://[::]/hook",
    "http://[::ffff:127.0.0.1]/hook",
    "http://[64:ff9b::a00:1]/hook",
    "http://[2002:7f00:1::]/hook",
    "http://2130706433/hook",  # 127.0.0.1 as one decimal number
    "http://0x7f.1/hook",
]


def _save(agent: Agent, url: str) -> Agent:
    return services.agent_settings_update(
        actor=None,
        agent=agent,
        display_name="",
        description="",
        webhook_url=url,
        webhook_format="json",
    )


@pytest.mark.parametrize("url", REFUSED)
def test_non_public_destinations_are_refused_naming_the_field(sre, url):
    with pytest.raises(InvalidInput) as refused:
        _save(sre.agent, url)
    assert list(refused.value.fields) == ["/webhook_url"]
    assert "CONSOLE_WEBHOOK_ALLOW_PRIVATE" in refused.value.fields["/webhook_url"][0]
    assert Agent.objects.get(pk=sre.agent.pk).webhook_url == ""
    assert not GovernanceEvent.objects.filter(action="agent.settings_changed").exists()


@pytest.mark.parametrize("url", ["ftp://hooks.example.org/x", "file:///etc/passwd"])
def test_only_http_and_https_are_webhooks(sre, url):
    with pytest.raises(InvalidInput) as refused:
        _save(sre.agent, url)
    assert "http:// or https://" in refused.value.fields["/webhook_url"][0]


def test_public_addresses_are_accepted(sre):
    assert _save(sre.agent, "https://93.184.215.14/hook").webhook_url.endswith("/hook")


def test_the_setting_allows_private_destinations(sre, settings):
    settings.CONSOLE_WEBHOOK_ALLOW_PRIVATE = True
    assert _save(sre.agent, "http://127.0.0.1:8080/hook").webhook_url.startswith("http://127")


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:9/x", "http://localhost:9/x", "http://[::1]/x", "http://10.0.0.5/x"]
)
def test_the_settings_form_shows_the_refusal_beside_the_field(admin_client, sre, url):
    response = admin_client.post(
        "/agents/sre-agent/settings/", {"webhook_url": url, "webhook_format": "json"}
    )
    assert response.status_code == 200
    assert "public addresses" in response.context["form"].errors["webhook_url"][0]
    assert Agent.objects.get(slug="sre-agent").webhook_url == ""


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("10.0.0.1", "private"),
        ("169.254.1.1", "link-local"),
        ("224.0.0.251", "multicast"),
        ("239.255.255.250", "multicast"),
        ("240.0.0.1", "reserved"),
        ("0.0.0.0", "unspecified"),
        ("100.64.0.1", "not a globally routable"),
        ("192.0.2.1", "private"),  # documentation range
        ("::ffff:10.0.0.1", "private"),
        ("2001:0:4136:e378:8000:63bf:f5ff:fffe", "private"),  # Teredo embedding 10.0.0.1
    ],
)
def test_address_kinds(address, kind):
    assert kind in (address_problem(ipaddress.ip_address(address)) or "")


@pytest.mark.parametrize("address", ["93.184.215.14", "2606:4700::1111", "1.1.1.1"])
def test_public_addresses_have_no_problem(address):
    assert address_problem(ipaddress.ip_address(address)) is None
