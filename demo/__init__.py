"""The demo of `make run`, kept out of the production apps.

- `documents`: the hook documents of the source examples (the seed custom agent, the
  audit-all-tools and completion-marker hooks, the demo approval hook), used by the seed and
  by tests that must work with them unchanged;
- `records`: realistic, payload-free interception records for demos, screenshots and tests;
- `agents`: the demo agents' configuration (`demo_agent_ensure`);
- commands: `seed_demo` (users and the SRE agent), `seed_audit_demo` (a fortnight of audit
  history), `run_demo_agent` (one demo agent process), `run_demo_agents` (the processes
  `run_console --demo` starts).

It sits above the apps: it may import agents, approvals, audit and console; nothing imports it.
"""
