"""The runtimes app. Other agent runtimes (README "Other agent runtimes"): Claude Code,
Codex CLI, Gemini CLI, Cursor and GitHub Copilot call the console from their own hooks, and
the console evaluates the agent's hook configuration for them, server-side.

- `views`: `POST /api/v1/hooks/{runtime}` (async: an approval holds the request open with no
  database connection) and `GET /api/v1/connect/{runtime}`;
- `evaluate`: one hook call end to end: read the runtime's input
  (`console_client.runtimes`), evaluate it with the shared implementation
  (`console_client.evaluation`, the SDK emitter over the agent's declaration), store the
  payload-free record through the records ingest, answer in the runtime's format;
- `execution`: the console-side hook runners (sandboxed commands under a concurrency bound,
  prompt hooks through the configured LLM) and the escalation resolver that waits for the
  reviewers' decision;
- `services`: the runtime sessions (record sequence, Stop rejections in a row) and records;
- `connect`: the ready-to-use hook settings for each runtime;
- `portal`: the "Connect an agent" page (/agents/<slug>/connect/), a tab of the agent pages.

It sits above agents, approvals and audit (it opens escalations and ingests records), so
none of them imports it; console/urls.py wires its URLs.
"""
