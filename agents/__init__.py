"""Agents, custom agents, hooks, configuration revisions and agent tokens."""
