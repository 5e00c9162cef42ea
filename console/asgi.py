"""ASGI routing: Django for HTTP, Channels for websockets (session auth, origin checked, a
request id per connection).

Once the application is built, the objects made at start-up (Django's apps, URL resolvers,
the imported modules: most of the process's heap) move to the collector's permanent
generation, and the youngest generation is collected after 20,000 net allocations instead
of 2,000. A request that parses a 1,000-record batch allocates tens of thousands of
containers, all alive until it ends: with the defaults every such request paid for several
young collections that found nothing to free, and each full collection rescanned the whole
start-up heap (docs/benchmarks.md, sixteenth pass).
"""

from __future__ import annotations

import gc
import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
django.setup(set_prefix=False)

from console.asgi_handler import ConsoleAsgiHandler  # noqa: E402

django_asgi_app = ConsoleAsgiHandler()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from console.request_id import RequestIdAsgiMiddleware  # noqa: E402
from console.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": RequestIdAsgiMiddleware(
            AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))
        ),
    }
)

GC_THRESHOLDS = (20_000, 20, 20)
gc.collect()
gc.freeze()
gc.set_threshold(*GC_THRESHOLDS)
