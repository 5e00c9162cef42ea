from typing import Any

app_name = "audit"
urlpatterns: list[Any] = []
