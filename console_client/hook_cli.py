"""`console-hook RUNTIME [--custom-agent NAME] [--event EVENT] [--timeout S] [--fail-open]`:
a command hook for runtimes whose hooks are commands only (Codex CLI, Gemini CLI, Cursor,
GitHub Copilot; Claude Code can call the console over http directly).

It reads the runtime's hook input on stdin, posts it verbatim to
`$CONSOLE_URL/api/v1/hooks/RUNTIME` with `Authorization: Bearer $CONSOLE_TOKEN`, prints the
console's answer (already in the runtime's own output format) on stdout and exits 0.
`GEMINI_CLI_CONSOLE_URL` / `GEMINI_CLI_CONSOLE_TOKEN` stand in for the two where Gemini CLI
passes hooks only its own variables.

When the console cannot answer (not configured, unreachable, too slow, or any answer but
200), a pre-tool event is blocked: the reason goes to stderr and the exit code and stdout
are what the runtime reads as a deny (`console_client.runtime_answers.failure`: exit 2 for Claude
Code, Codex and Gemini CLI; a deny on stdout for Cursor and Copilot). Other events are let
through with a warning on stderr. `--fail-open` lets pre-tool events through as well.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import IO, Any

import httpx

from console_client.runtime_answers import failure
from console_client.runtimes import RUNTIMES

URL_ENV = "CONSOLE_URL"
TOKEN_ENV = "CONSOLE_TOKEN"
# Gemini CLI hands hook commands only GEMINI_CLI_* variables when it sanitizes the
# environment (it does under GitHub Actions): the same two, under names that survive.
GEMINI_PREFIX = "GEMINI_CLI_"
TIMEOUT_DEFAULT = 60.0
STDIN_MAX_BYTES = 16 * 1024 * 1024


class ConsoleUnavailable(Exception):
    """The console gave no usable answer; the message says why (never the token)."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="console-hook",
        description="Send an agent runtime's hook event to the governance console.",
    )
    parser.add_argument("runtime", choices=RUNTIMES, help="the agent runtime calling this hook")
    parser.add_argument("--custom-agent", default="", help="evaluate this custom agent's hooks too")
    parser.add_argument(
        "--event", default="", help="the event name, for runtimes whose input does not carry it"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=TIMEOUT_DEFAULT,
        help=f"seconds to wait for the console (default {TIMEOUT_DEFAULT:g})",
    )
    parser.add_argument(
        "--fail-open",
        action="store_true",
        help="let pre-tool events through when the console cannot answer (default: block)",
    )
    return parser


def _setting(environ: Mapping[str, str], name: str) -> str:
    return (environ.get(name) or environ.get(GEMINI_PREFIX + name) or "").strip()


def _event_of(raw: bytes, hint: str) -> str | None:
    if hint:
        return hint
    try:
        body = json.loads(raw)
    except ValueError:
        return None
    if isinstance(body, dict):
        name = body.get("hook_event_name") or body.get("hookEventName")
        return name if isinstance(name, str) else None
    return None


def _error_message(response: httpx.Response) -> str:
    try:
        error = response.json().get("error") or {}
        message = error.get("message")
    except (ValueError, AttributeError):
        message = None
    return f"the console answered {response.status_code}" + (f": {message}" if message else "")


def ask_console(
    *,
    runtime: str,
    raw: bytes,
    environ: Mapping[str, str],
    custom_agent: str = "",
    event: str = "",
    timeout: float = TIMEOUT_DEFAULT,
) -> str:
    """The console's answer body (the runtime's stdout JSON); ConsoleUnavailable otherwise."""
    base_url = _setting(environ, URL_ENV).rstrip("/")
    token = _setting(environ, TOKEN_ENV)
    if not base_url:
        raise ConsoleUnavailable(f"{URL_ENV} is not set")
    if not token:
        raise ConsoleUnavailable(f"{TOKEN_ENV} is not set")
    params = {
        key: value for key, value in (("custom_agent", custom_agent), ("event", event)) if value
    }
    try:
        response = httpx.post(
            f"{base_url}/api/v1/hooks/{runtime}",
            params=params,
            content=raw,
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            timeout=timeout,
        )
    except httpx.TimeoutException:
        raise ConsoleUnavailable(f"the console did not answer within {timeout:g} s") from None
    except httpx.HTTPError as exc:
        raise ConsoleUnavailable(f"the console is unreachable ({type(exc).__name__})") from None
    if response.status_code != 200:
        raise ConsoleUnavailable(_error_message(response))
    try:
        answer: Any = response.json()
    except ValueError:
        raise ConsoleUnavailable("the console's answer is not JSON") from None
    if not isinstance(answer, dict):
        raise ConsoleUnavailable("the console's answer is not a JSON object")
    return json.dumps(answer)


def main(
    argv: Sequence[str] | None = None,
    *,
    stdin: IO[bytes] | None = None,
    stdout: IO[str] | None = None,
    stderr: IO[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> int:
    args = _parser().parse_args(argv)
    stdin = stdin if stdin is not None else sys.stdin.buffer
    stdout = stdout if stdout is not None else sys.stdout
    stderr = stderr if stderr is not None else sys.stderr
    raw = stdin.read(STDIN_MAX_BYTES + 1)
    event = _event_of(raw, args.event)
    try:
        if len(raw) > STDIN_MAX_BYTES:
            raise ConsoleUnavailable(f"the hook input is larger than {STDIN_MAX_BYTES} bytes")
        answer = ask_console(
            runtime=args.runtime,
            raw=raw,
            environ=os.environ if environ is None else environ,
            custom_agent=args.custom_agent,
            event=args.event,
            timeout=args.timeout,
        )
    except ConsoleUnavailable as exc:
        result = failure(args.runtime, event, str(exc), fail_open=args.fail_open)
        if result.stdout:
            stdout.write(result.stdout + "\n")
        stderr.write(result.stderr)
        return result.exit_code
    if answer != "{}":
        stdout.write(answer + "\n")
    return 0


if __name__ == "__main__":  # pragma: no cover - the console script calls main()
    sys.exit(main())
