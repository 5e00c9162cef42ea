from django.apps import AppConfig


class RuntimesConfig(AppConfig):
    """The adapters for other agent runtimes, above agents, approvals and audit: they open
    escalations and ingest records. It owns no table (its runtime sessions stay in
    agents.RuntimeSession, see docs/architecture.md)."""

    name = "runtimes"
