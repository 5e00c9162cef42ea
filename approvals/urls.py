from typing import Any

app_name = "approvals"
urlpatterns: list[Any] = []
