"""Every action the governance log knows. A new kind of state change adds its action here:
`governance_event_record` refuses any other (a typo would otherwise hide an event from the
action filter of the events page)."""

from __future__ import annotations

from django.db import models


class GovernanceAction(models.TextChoices):
    # agents: configuration (each also writes a configuration revision)
    AGENT_CREATED = "agent.created", "Agent created"
    AGENT_MODE_CHANGED = "agent.mode_changed", "Agent mode changed"
    AGENT_SETTINGS_CHANGED = "agent.settings_changed", "Agent settings changed"
    HOOKS_REPLACED = "hooks.replaced", "Hooks replaced"
    HOOK_CREATED = "hook.created", "Hook created"
    HOOK_UPDATED = "hook.updated", "Hook updated"
    HOOK_ENABLED = "hook.enabled", "Hook enabled"
    HOOK_DISABLED = "hook.disabled", "Hook disabled"
    HOOK_REORDERED = "hook.reordered", "Hook reordered"
    HOOK_DELETED = "hook.deleted", "Hook deleted"
    CUSTOM_AGENT_CREATED = "custom_agent.created", "Custom agent created"
    CUSTOM_AGENT_REPLACED = "custom_agent.replaced", "Custom agent replaced"
    CUSTOM_AGENT_UPDATED = "custom_agent.updated", "Custom agent updated"
    CUSTOM_AGENT_DELETED = "custom_agent.deleted", "Custom agent deleted"
    REVISION_ROLLED_BACK = "revision.rolled_back", "Revision rolled back"
    # agents: the "Test this hook" runs
    HOOK_TESTED = "hook.tested", "Hook tested"
    HOOK_SAMPLE_SAVED = "hook.sample_saved", "Hook sample saved"
    HOOK_SAMPLE_DELETED = "hook.sample_deleted", "Hook sample deleted"
    # tokens: agent tokens (agents) and personal API tokens (console)
    TOKEN_ISSUED = "token.issued", "Token issued"
    TOKEN_REVOKED = "token.revoked", "Token revoked"
    # console: people and roles
    USER_CREATED = "user.created", "User created"
    USER_ROLE_SET = "user.role_set", "User role set"
    USER_DEACTIVATED = "user.deactivated", "User deactivated"
    USER_REACTIVATED = "user.reactivated", "User reactivated"
    USER_INVITATION_ISSUED = "user.invitation_issued", "User invitation link issued"
    # approvals
    ESCALATION_CREATED = "escalation.created", "Escalation created"
    ESCALATION_VOTED = "escalation.voted", "Escalation voted"
    ESCALATION_APPROVED = "escalation.approved", "Escalation approved"
    ESCALATION_REJECTED = "escalation.rejected", "Escalation rejected"
    ESCALATION_EXPIRED = "escalation.expired", "Escalation expired"
    ESCALATION_CANCELLED = "escalation.cancelled", "Escalation cancelled"
    ESCALATION_PAYLOAD_PURGED = "escalation.payload_purged", "Escalation payload purged"
    REVIEWER_SCOPE_SET = "reviewer.scope_set", "Reviewer scope set"
    REVIEWER_SLACK_SET = "reviewer.slack_set", "Reviewer's Slack member set"
    # audit
    RECORDS_DEAD_LETTERED = "records.dead_lettered", "Records dead-lettered"
    RECORDS_PURGED = "records.purged", "Records purged"
    RECORDS_EXPORTED = "records.exported", "Records exported"
    RECORDS_CHAIN_VERIFIED = "records.chain_verified", "Record chains verified"
    GOVERNANCE_EVENTS_EXPORTED = "governance.exported", "Governance events exported"
