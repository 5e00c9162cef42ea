"""The console's ASGI application with static files served, for a daphne subprocess in browser
tests (daphne itself serves no static files; `runserver` would wrap the app the same way)."""

from __future__ import annotations

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

from console.asgi import application as console_application

application = ASGIStaticFilesHandler(console_application)
