"""A scripted agent_framework chat client: no network, no LLM.

It is a real chat client (the framework's function-invocation and chat-middleware layers
over `BaseChatClient`), so the agent loop, the middleware seams and the agent-hooks bundle
run exactly as with a hosted model. Each model call is answered by the next step of a
script (a message, a text, or a whole `ChatResponse` when its finish reason matters), or by
a `responder(messages)` function; every request is kept in `requests` so a
test can see what the model was shown. The demo agent and the end-to-end tests use it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from agent_framework import (
    BaseChatClient,
    ChatMiddlewareLayer,
    ChatResponse,
    Content,
    FunctionInvocationLayer,
    Message,
)

Responder = Callable[[list[Message]], Message]
Step = Message | ChatResponse[Any] | str | Responder


def tool_call(name: str, arguments: Mapping[str, Any], call_id: str) -> Message:
    """An assistant message that calls one tool."""
    return Message(
        "assistant", [Content.from_function_call(call_id, name, arguments=dict(arguments))]
    )


def say(text: str) -> Message:
    return Message("assistant", [text])


def message_texts(messages: Sequence[Message], role: str | None = None) -> list[str]:
    """The text of each message (optionally of one role), tool results included."""
    out: list[str] = []
    for message in messages:
        if role is not None and str(getattr(message.role, "value", message.role)) != role:
            continue
        parts: list[str] = []
        for content in message.contents:
            if content.type == "text":
                parts.append(content.text or "")
            elif content.type == "function_result":
                parts.append(str(content.result))
        out.append("".join(parts))
    return out


class ScriptedChatClient(
    FunctionInvocationLayer[Any], ChatMiddlewareLayer[Any], BaseChatClient[Any]
):
    """Answers each model call from a script (a list of steps) or a responder."""

    OTEL_PROVIDER_NAME = "scripted"

    def __init__(
        self,
        script: Iterable[Step] = (),
        *,
        responder: Responder | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.script: list[Step] = list(script)
        self.responder = responder
        self.requests: list[list[Message]] = []

    async def _inner_get_response(
        self,
        *,
        messages: Sequence[Message],
        stream: bool,
        options: Mapping[str, Any],
        **kwargs: Any,
    ) -> ChatResponse[Any]:
        if stream:
            raise NotImplementedError("the scripted client answers non-streaming calls only")
        seen = list(messages)
        self.requests.append(seen)
        if self.script:
            step = self.script.pop(0)
        elif self.responder is not None:
            step = self.responder
        else:
            raise RuntimeError("the scripted model has no answer left")
        if callable(step) and not isinstance(step, Message | ChatResponse):
            step = step(seen)
        if isinstance(step, ChatResponse):
            return step
        message = say(step) if isinstance(step, str) else step
        return ChatResponse(messages=[message], response_id=f"scripted-{len(self.requests)}")
