from django.apps import AppConfig
from django.core import checks


class ConsoleConfig(AppConfig):
    name = "console"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from console.async_middleware import middleware_check

        checks.register(middleware_check, checks.Tags.security)
