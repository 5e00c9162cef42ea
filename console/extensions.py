"""Extension points: how an app contributes to the pages of an app below it without that app
importing it (NetBox's "template extensions"). The lower app declares a point and calls it
where its page needs the contributions; an app above registers a provider for it in its
`AppConfig.ready()`. Calling a point runs every provider, in registration order, and returns
their results: an empty list while none is registered, so the lower app works on its own.

The points of the agent pages are declared in agents/extensions.py.
"""

from __future__ import annotations

from collections.abc import Callable


class ExtensionPoint[**P, R]:
    def __init__(self, name: str) -> None:
        self.name = name
        self._providers: dict[str, Callable[P, R]] = {}

    def register(self, provider: Callable[P, R]) -> Callable[P, R]:
        """Adds `provider`, keyed by its dotted name: registering it again (a second `ready()`)
        replaces it instead of running it twice."""
        self._providers[f"{provider.__module__}.{provider.__qualname__}"] = provider
        return provider

    def providers(self) -> list[str]:
        """The dotted names of the registered providers, in order."""
        return list(self._providers)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> list[R]:
        return [provider(*args, **kwargs) for provider in self._providers.values()]
