"""bench/asgi_hops.py's baseline: the console's ASGI application with Django's own HTTP
handler (`get_asgi_application()`) in place of console.asgi_handler.ConsoleAsgiHandler,
and Django's own middleware classes in place of console.async_middleware's; the websocket
side as in console.asgi."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")

import django  # noqa: E402

django.setup(set_prefix=False)

from django.conf import settings  # noqa: E402

from console.async_middleware import stock_middleware  # noqa: E402

settings.MIDDLEWARE = stock_middleware(settings.MIDDLEWARE)
stock_http = get_asgi_application()

from channels.routing import ProtocolTypeRouter  # noqa: E402

from console.asgi import application as console_application  # noqa: E402

application = ProtocolTypeRouter(
    {"http": stock_http, "websocket": console_application.application_mapping["websocket"]}
)
