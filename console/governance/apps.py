from django.apps import AppConfig


class GovernanceConfig(AppConfig):
    name = "console.governance"
    label = "governance"
    verbose_name = "Governance log"
    default_auto_field = "django.db.models.BigAutoField"
