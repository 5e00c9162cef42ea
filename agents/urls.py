from typing import Any

app_name = "agents"
urlpatterns: list[Any] = []
