from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "audit"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The agent pages' dead-letter summary, hook activity and last hook errors.
        from audit import agent_pages

        agent_pages.register()
