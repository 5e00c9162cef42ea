"""The LLM judge for prompt hooks: an OpenAI-compatible chat-completions client over httpx.

Configured from the environment (`LLMJudge.from_env()`):

- `CONSOLE_LLM_BASE_URL`: the API root, e.g. `https://api.openai.com/v1` (requests go to
  `<base>/chat/completions`);
- `CONSOLE_LLM_API_KEY`: sent as `Authorization: Bearer <key>` (optional for local servers);
- `CONSOLE_LLM_MODELS`: a map from model tier to model name,
  `ReasoningFast=gpt-4o-mini,Fast=gpt-4o-mini,...`. A hook's `model` that is not in the
  map (a deployment name, or an unmapped tier) is sent as the model name unchanged.

One exchange offers the transcript tools (`ReadFile`, `GrepSearch`) and runs the tool calls
the model makes for a small bounded number of rounds; the caller bounds the whole exchange
with the hook's timeout. The tools run in a daemon thread and never hold the interpreter
lock for long (file reads, RE2 searches that release it), so the event loop stays free and
the timeout fires on time; a cancelled exchange tells its running tool to stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import threading
from collections.abc import Mapping
from typing import Any

import httpx

from console_client.transcript import TranscriptTools

BASE_URL_ENV = "CONSOLE_LLM_BASE_URL"
API_KEY_ENV = "CONSOLE_LLM_API_KEY"
MODELS_ENV = "CONSOLE_LLM_MODELS"
MAX_TOOL_ROUNDS = 4
REQUEST_TIMEOUT_S = 300.0
# A chat completion is a few KiB: a bigger answer is refused before it is parsed (parsing
# runs on the agent's event loop).
RESPONSE_MAX_BYTES = 4 * 1024 * 1024


class LLMError(Exception):
    """The judge could not produce an answer (HTTP error, bad response, too many tool rounds)."""


class LLMConfigurationError(LLMError):
    """The judge's environment configuration is missing or malformed."""


def parse_model_map(raw: str) -> dict[str, str]:
    """`Tier=model,Tier2=model2` → {"Tier": "model", ...}; a malformed entry raises."""
    models: dict[str, str] = {}
    for entry in raw.split(","):
        if not entry.strip():
            continue
        tier, sep, model = entry.partition("=")
        if not sep or not tier.strip() or not model.strip():
            raise LLMConfigurationError(
                f"{MODELS_ENV} entry {entry.strip()!r} must look like Tier=model-name"
            )
        models[tier.strip()] = model.strip()
    return models


class LLMJudge:
    """Where the judge lives and which model each tier means.

    `LLMJudge()` reads the environment. A missing or malformed environment does not raise
    here: every exchange then fails with `LLMConfigurationError`, which the runner turns
    into a hook error decided by the hook's failMode. Use `from_env()` to fail at once.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        models: Mapping[str, str] | None = None,
        *,
        max_tool_rounds: int = MAX_TOOL_ROUNDS,
        temperature: float = 0.0,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        env = os.environ if environ is None else environ
        self.configuration_error: str | None = None
        self.base_url = (base_url if base_url is not None else env.get(BASE_URL_ENV, "")).strip()
        self.api_key = api_key if api_key is not None else (env.get(API_KEY_ENV) or None)
        self.max_tool_rounds = max_tool_rounds
        self.temperature = temperature
        self.models: Mapping[str, str] = {}
        try:
            self.models = (
                dict(models) if models is not None else parse_model_map(env.get(MODELS_ENV, ""))
            )
        except LLMConfigurationError as exc:
            self.configuration_error = str(exc)
        if not self.base_url:
            self.configuration_error = f"{BASE_URL_ENV} is not set: prompt hooks need a judge"
        elif not self.base_url.startswith(("http://", "https://")):
            self.configuration_error = (
                f"the judge's base URL must start with http:// or https://, got {self.base_url!r}"
            )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> LLMJudge:
        """A judge from the environment, raising `LLMConfigurationError` if it is unusable."""
        judge = cls(environ=environ)
        if judge.configuration_error:
            raise LLMConfigurationError(judge.configuration_error)
        return judge

    def model_for(self, name: str) -> str:
        """The model name for a tier; anything else (a deployment name) passes through."""
        return self.models.get(name, name)

    @property
    def endpoint(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"

    async def ajudge(self, *, system: str, prompt: str, model: str, tools: TranscriptTools) -> str:
        """The model's final text after at most `max_tool_rounds` rounds of tool calls."""
        if self.configuration_error:
            raise LLMConfigurationError(self.configuration_error)
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": system},
            {"role": "user", "content": prompt},
        ]
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT_S, headers=headers) as client:
            for _ in range(self.max_tool_rounds + 1):
                message = await self._complete(client, model, messages, tools)
                calls = message.get("tool_calls") or []
                if not calls:
                    content = message.get("content")
                    if not isinstance(content, str) or not content.strip():
                        raise LLMError("the model's final message has no text")
                    return content
                messages.append(
                    {"role": "assistant", "content": message.get("content"), "tool_calls": calls}
                )
                for call in calls:
                    messages.append(await self._tool_message(call, tools))
        raise LLMError(f"the model still called tools after {self.max_tool_rounds} rounds")

    async def _complete(
        self,
        client: httpx.AsyncClient,
        model: str,
        messages: list[dict[str, Any]],
        tools: TranscriptTools,
    ) -> dict[str, Any]:
        body = {
            "model": model,
            "messages": messages,
            "tools": tools.definitions(),
            "tool_choice": "auto",
            "temperature": self.temperature,
        }
        try:
            async with client.stream("POST", self.endpoint, json=body) as response:
                data = await _read_capped(response, RESPONSE_MAX_BYTES)
        except httpx.HTTPError as exc:
            raise LLMError(f"request to {self.endpoint} failed: {type(exc).__name__}") from exc
        if data is None:
            raise LLMError(f"{self.endpoint} answered more than {RESPONSE_MAX_BYTES} bytes")
        text = data.decode("utf-8", errors="replace")
        if response.status_code != 200:
            raise LLMError(f"{self.endpoint} answered HTTP {response.status_code}: {text[:200]!r}")
        try:
            payload = json.loads(text)
            message = payload["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise LLMError(
                f"{self.endpoint} did not answer a chat completion: {text[:200]!r}"
            ) from None
        if not isinstance(message, dict):
            raise LLMError("the chat completion's message is not an object")
        return message

    @staticmethod
    async def _tool_message(call: Any, tools: TranscriptTools) -> dict[str, Any]:
        if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
            raise LLMError("the model sent a malformed tool call")
        function = call["function"]
        result = await _off_loop(tools, str(function.get("name", "")), function.get("arguments"))
        return {"role": "tool", "tool_call_id": str(call.get("id", "")), "content": result}


async def _read_capped(response: httpx.Response, limit: int) -> bytes | None:
    """The response body, or None once it passes `limit` bytes (the rest is not read)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


async def _off_loop(tools: TranscriptTools, name: str, arguments: Any) -> str:
    """Run a tool in a daemon thread: a long search must neither block the loop (the timeout
    could not fire) nor hold up the loop's shutdown (the default executor is joined). When
    the await is cancelled (the hook's timeout), the tool is told to stop at its next line."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[str] = loop.create_future()
    cancelled = threading.Event()

    def deliver(outcome: str | BaseException) -> None:
        if future.done():
            return
        if isinstance(outcome, BaseException):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)

    def work() -> None:
        outcome: str | BaseException
        try:
            outcome = tools.call(name, arguments, cancelled)
        except Exception as exc:
            outcome = exc
        with contextlib.suppress(RuntimeError):  # the loop is already closed
            loop.call_soon_threadsafe(deliver, outcome)

    threading.Thread(target=work, name="console-judge-tool", daemon=True).start()
    try:
        return await future
    finally:
        cancelled.set()
