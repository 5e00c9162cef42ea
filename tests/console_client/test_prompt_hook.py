"""Prompt hooks against a real chat-completions server on loopback with scripted answers."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from console_client import arun_prompt_hook, run_prompt_hook
from console_client.llm import LLMConfigurationError, LLMJudge, parse_model_map
from console_client.transcript import SessionTranscript, TranscriptTools


@dataclass
class Scripted:
    """One scripted answer: an assistant message, or a raw HTTP answer, after `delay` s."""

    message: dict[str, Any] | None = None
    status: int = 200
    raw: bytes | None = None
    delay: float = 0.0


@dataclass
class ChatServer:
    server: ThreadingHTTPServer
    answers: list[Scripted] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def script(self, *answers: Scripted | dict[str, Any]) -> None:
        self.answers = [a if isinstance(a, Scripted) else Scripted(message=a) for a in answers]


def say(content: str) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def call_tool(name: str, arguments: dict[str, Any], call_id: str = "call_1") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ],
    }


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
            answer = state.answers.pop(0) if len(state.answers) > 1 else state.answers[0]
            time.sleep(answer.delay)
            if answer.raw is not None:
                data = answer.raw
            else:
                data = json.dumps(
                    {
                        "id": "chatcmpl-test",
                        "object": "chat.completion",
                        "model": body["model"],
                        "choices": [
                            {"index": 0, "message": answer.message, "finish_reason": "stop"}
                        ],
                    }
                ).encode()
            self.send_response(answer.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.block_on_close = False
    state = ChatServer(server)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()


@pytest.fixture
def judge(chat: ChatServer) -> LLMJudge:
    return LLMJudge(
        base_url=chat.url,
        api_key="test-key",
        models={"ReasoningFast": "judge-fast", "Fast": "judge-cheap"},
    )


@pytest.fixture
def transcript(tmp_path: Path) -> SessionTranscript:
    session = SessionTranscript.create("session-1", tmp_path)
    session.append("user", "Restart the api service please.")
    session.append("tool", "api restarted (pid 4242)", tool_name="Bash", call_id="c1")
    session.append("assistant", "The api service is restarted.")
    return session


def stop_context(transcript: SessionTranscript, final_output: str = "Done.") -> dict[str, Any]:
    return {
        "hook_event_name": "Stop",
        "agent_name": "sre-agent",
        "current_turn": 2,
        "max_turns": 40,
        "execution_summary": str(transcript.path),
        "final_output": final_output,
        "stop_hook_active": False,
        "stop_rejection_count": 0,
    }


def prompt_hook(prompt: str = "Check the answer.\n$ARGUMENTS\nRespond.", **extra: Any) -> dict:
    return {"type": "prompt", "prompt": prompt, "timeout": 10, **extra}


def test_ok_true_allows_and_the_request_is_well_formed(
    chat: ChatServer, judge: LLMJudge, transcript: SessionTranscript
) -> None:
    chat.script(say('{"ok": true}'))
    context = stop_context(transcript)
    result = run_prompt_hook(prompt_hook(), context, llm=judge)
    assert (result.decision, result.error) == ("allow", None)
    [request] = chat.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer test-key"
    body = request["body"]
    assert body["model"] == "judge-fast"  # the default tier, mapped
    system, user = body["messages"]
    assert system["role"] == "system" and '{"ok": true}' in system["content"]
    pretty = json.dumps(context, indent=2, sort_keys=True)
    assert user == {"role": "user", "content": f"Check the answer.\n{pretty}\nRespond."}
    assert [tool["function"]["name"] for tool in body["tools"]] == ["ReadFile", "GrepSearch"]


def test_context_is_appended_when_arguments_is_absent(
    chat: ChatServer, judge: LLMJudge, transcript: SessionTranscript
) -> None:
    chat.script(say('{"ok": true}'))
    context = stop_context(transcript)
    run_prompt_hook(prompt_hook("Is the answer polite?"), context, llm=judge)
    content = chat.requests[0]["body"]["messages"][1]["content"]
    assert content == "Is the answer polite?\n\n" + json.dumps(context, indent=2, sort_keys=True)


def test_rejection_with_reason_blocks(
    chat: ChatServer, judge: LLMJudge, transcript: SessionTranscript
) -> None:
    chat.script(say('{"ok": false, "reason": "End your response with \'Task complete.\'"}'))
    result = run_prompt_hook(prompt_hook(), stop_context(transcript), llm=judge)
    assert (result.decision, result.reason) == ("block", "End your response with 'Task complete.'")


def test_stop_rejection_without_reason_is_an_approval(
    chat: ChatServer, judge: LLMJudge, transcript: SessionTranscript
) -> None:
    chat.script(say('{"ok": false}'))
    result = run_prompt_hook(prompt_hook(), stop_context(transcript), llm=judge)
    assert (result.decision, result.error) == ("allow", None)


def test_fenced_extended_answer_with_context(
    chat: ChatServer, judge: LLMJudge, transcript: SessionTranscript
) -> None:
    answer = (
        "Verdict:\n```json\n"
        '{"decision": "allow", "hookSpecificOutput": {"additionalContext": "Mind the SLO."}}\n```'
    )
    chat.script(say(answer))
    context = {**stop_context(transcript), "hook_event_name": "PostToolUse", "tool_name": "Bash"}
    result = run_prompt_hook(prompt_hook(), context, llm=judge)
    assert (result.decision, result.additional_context) == ("allow", "Mind the SLO.")
    assert result.stdout == answer


def test_read_file_tool_returns_the_transcript(
    chat: ChatServer, judge: LLMJudge, transcript: SessionTranscript
) -> None:
    chat.script(call_tool("ReadFile", {"path": str(transcript.path)}), say('{"ok": true}'))
    result = run_prompt_hook(prompt_hook(), stop_context(transcript), llm=judge)
    assert result.decision == "allow"
    assert len(chat.requests) == 2
    messages = chat.requests[1]["body"]["messages"]
    assert messages[2]["tool_calls"][0]["function"]["name"] == "ReadFile"
    tool = messages[3]
    assert (tool["role"], tool["tool_call_id"]) == ("tool", "call_1")
    lines = transcript.path.read_text().splitlines()
    assert tool["content"] == "\n".join(f"{n}\t{line}" for n, line in enumerate(lines, 1))


def test_grep_search_tool_finds_transcript_lines(
    chat: ChatServer, judge: LLMJudge, transcript: SessionTranscript
) -> None:
    chat.script(call_tool("GrepSearch", {"pattern": r"pid \d+"}), say('{"ok": true}'))
    run_prompt_hook(prompt_hook(), stop_context(transcript), llm=judge)
    tool = chat.requests[1]["body"]["messages"][3]
    second_line = transcript.path.read_text().splitlines()[1]
    assert tool["content"] == f"2:{second_line}"


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("ReadFile", {"path": "/etc/passwd"}),
        ("ReadFile", {"path": "../../../../etc/passwd"}),
        ("GrepSearch", {"pattern": "root", "path": "/etc/passwd"}),
    ],
)
def test_tools_refuse_any_other_file(
    chat: ChatServer,
    judge: LLMJudge,
    transcript: SessionTranscript,
    name: str,
    arguments: dict[str, Any],
) -> None:
    assert "root:" in Path("/etc/passwd").read_text()  # control: there is something to leak
    chat.script(call_tool(name, arguments), say('{"ok": true}'))
    run_prompt_hook(prompt_hook(), stop_context(transcript), llm=judge)
    content = chat.requests[1]["body"]["messages"][3]["content"]
    assert content.startswith("Error: only the transcript")
    assert "root:" not in content


@pytest.mark.parametrize(
    ("model", "sent"),
    [
        ("Fast", "judge-cheap"),
        ("Reasoning", "Reasoning"),
        ("my-gpt4o-deployment", "my-gpt4o-deployment"),
    ],
)
def test_model_tier_maps_and_other_names_pass_through(
    chat: ChatServer, judge: LLMJudge, transcript: SessionTranscript, model: str, sent: str
) -> None:
    chat.script(say('{"ok": true}'))
    run_prompt_hook(prompt_hook(model=model), stop_context(transcript), llm=judge)
    assert chat.requests[0]["body"]["model"] == sent


@pytest.mark.parametrize(
    ("answer", "error_part"),
    [
        (Scripted(message=say("The answer looks fine to me.")), "not a valid hook answer"),
        (Scripted(status=500, raw=b'{"error": "overloaded"}'), "HTTP 500"),
        (Scripted(raw=b"<html>proxy error</html>"), "did not answer a chat completion"),
        (Scripted(message={"role": "assistant", "content": ""}), "has no text"),
    ],
)
@pytest.mark.parametrize("fail_mode", ["allow", "block"])
def test_judge_failures_are_decided_by_fail_mode(
    chat: ChatServer,
    judge: LLMJudge,
    transcript: SessionTranscript,
    answer: Scripted,
    error_part: str,
    fail_mode: str,
) -> None:
    chat.script(answer)
    result = run_prompt_hook(prompt_hook(failMode=fail_mode), stop_context(transcript), llm=judge)
    assert result.error is not None and error_part in result.error
    assert result.decision == fail_mode
    if fail_mode == "block":
        assert error_part in result.reason


def test_timeout_bounds_the_whole_exchange(
    chat: ChatServer, judge: LLMJudge, transcript: SessionTranscript
) -> None:
    chat.script(
        Scripted(message=call_tool("ReadFile", {"path": str(transcript.path)}), delay=0.6),
        Scripted(message=say('{"ok": true}'), delay=0.6),
    )
    started = time.monotonic()
    result = run_prompt_hook(
        prompt_hook(timeout=1, failMode="block"), stop_context(transcript), llm=judge
    )
    # A guard against a hang, with room for a loaded machine (3.6 s seen in CI): the answer
    # itself shows the bound, an exchange timed per request would end "ok" after 1.2 s.
    assert time.monotonic() - started < 10
    assert result.decision == "block"
    assert result.error == "the judge did not answer within 1 s"


def test_unreachable_judge_is_a_hook_error(transcript: SessionTranscript) -> None:
    with ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler) as probe:
        port = probe.server_address[1]  # a port nobody listens on once closed
    judge = LLMJudge(base_url=f"http://127.0.0.1:{port}/v1")
    result = run_prompt_hook(prompt_hook(failMode="block"), stop_context(transcript), llm=judge)
    assert result.decision == "block"
    assert result.error is not None and "ConnectError" in result.error


def test_tool_rounds_are_bounded(
    chat: ChatServer, judge: LLMJudge, transcript: SessionTranscript
) -> None:
    chat.script(call_tool("GrepSearch", {"pattern": "api"}))
    result = run_prompt_hook(prompt_hook(failMode="block"), stop_context(transcript), llm=judge)
    assert result.decision == "block"
    assert result.error is not None and "still called tools after 4 rounds" in result.error
    assert len(chat.requests) == 5


async def test_async_variant(
    chat: ChatServer, judge: LLMJudge, transcript: SessionTranscript
) -> None:
    chat.script(say('{"ok": false, "reason": "say Task complete."}'))
    result = await arun_prompt_hook(prompt_hook(), stop_context(transcript), llm=judge)
    assert (result.decision, result.reason) == ("block", "say Task complete.")


def test_judge_is_configured_from_the_environment(chat: ChatServer) -> None:
    env = {
        "CONSOLE_LLM_BASE_URL": chat.url,
        "CONSOLE_LLM_API_KEY": "k-123",
        "CONSOLE_LLM_MODELS": "ReasoningFast=gpt-4o-mini, Fast = gpt-4o-nano ,",
    }
    judge = LLMJudge.from_env(env)
    assert (judge.base_url, judge.api_key) == (chat.url, "k-123")
    assert judge.model_for("Fast") == "gpt-4o-nano"
    assert judge.model_for("ReasoningFast") == "gpt-4o-mini"
    assert judge.model_for("my-deployment") == "my-deployment"


def test_malformed_model_map_names_the_variable() -> None:
    with pytest.raises(LLMConfigurationError, match="CONSOLE_LLM_MODELS entry 'Fast' must look"):
        parse_model_map("ReasoningFast=gpt-4o-mini,Fast")
    with pytest.raises(LLMConfigurationError, match="CONSOLE_LLM_MODELS"):
        LLMJudge.from_env({"CONSOLE_LLM_BASE_URL": "http://x", "CONSOLE_LLM_MODELS": "=m"})


def test_unconfigured_judge_is_a_hook_error_naming_the_variable(
    transcript: SessionTranscript,
) -> None:
    judge = LLMJudge(environ={})
    with pytest.raises(LLMConfigurationError, match="CONSOLE_LLM_BASE_URL is not set"):
        LLMJudge.from_env({})
    result = run_prompt_hook(prompt_hook(failMode="block"), stop_context(transcript), llm=judge)
    assert result.decision == "block"
    assert result.error is not None and "CONSOLE_LLM_BASE_URL is not set" in result.error


class Ticker:
    """A task that ticks every 10 ms: the widest gap between ticks shows how long the
    event loop was blocked."""

    def __init__(self) -> None:
        self.widest = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.01)
            now = time.monotonic()
            self.widest = max(self.widest, now - last)
            last = now

    def __enter__(self) -> Ticker:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()


# `(a+)+$` backtracks exponentially over a run of a's that does not end the line: with
# Python's `re` this line takes ~10 s, holding the interpreter lock all along.
REDOS_LINE = "a" * 26 + "!"


async def test_a_catastrophic_grep_pattern_neither_blocks_the_loop_nor_outlives_the_timeout(
    chat: ChatServer, judge: LLMJudge, tmp_path: Path
) -> None:
    session = SessionTranscript.create("redos", tmp_path)
    session.append("user", REDOS_LINE)
    chat.script(call_tool("GrepSearch", {"pattern": "(a+)+$"}), say('{"ok": true}'))
    started = time.monotonic()
    with Ticker() as ticker:
        result = await arun_prompt_hook(
            prompt_hook(timeout=2, failMode="block"), stop_context(session), llm=judge
        )
    # Bounds with room for a loaded machine; the backtracking search holds the loop ~10 s.
    assert time.monotonic() - started < 5
    assert ticker.widest < 2
    assert (result.decision, result.error) == ("allow", None)
    assert chat.requests[1]["body"]["messages"][3]["content"] == "No matches."


def test_grep_patterns_only_python_can_run_are_refused_with_a_message(
    transcript: SessionTranscript,
) -> None:
    tools = TranscriptTools(transcript.path)
    answer = tools.call("GrepSearch", {"pattern": r"(api)\s+\1"})
    assert answer.startswith("Error: invalid regular expression (RE2 syntax)")
    assert tools.call("GrepSearch", {"pattern": r"(?<=pid )\d+"}).startswith("Error: invalid")
    surrogate = tools.call("GrepSearch", '{"pattern": "api\\ud800"}')
    assert surrogate.startswith("Error: invalid regular expression")


def test_a_cancelled_tool_stops_reading(transcript: SessionTranscript) -> None:
    tools = TranscriptTools(transcript.path)
    cancelled = threading.Event()
    cancelled.set()
    assert tools.call("GrepSearch", {"pattern": "api"}, cancelled) == "No matches."
    assert tools.call("GrepSearch", {"pattern": "api"}).startswith("1:")


def test_an_oversized_judge_answer_is_a_hook_error_not_parsed(
    chat: ChatServer, judge: LLMJudge, transcript: SessionTranscript
) -> None:
    huge = b'{"choices": [{"message": {"role": "assistant", "content": "' + b"x" * (5 << 20)
    chat.script(Scripted(raw=huge + b'"}}]}'))
    result = run_prompt_hook(prompt_hook(failMode="block"), stop_context(transcript), llm=judge)
    assert result.decision == "block"
    assert result.error is not None and "answered more than 4194304 bytes" in result.error
