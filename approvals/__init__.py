"""Escalations and decisions: reviewer inbox, live updates, agent long-poll, expiry."""
