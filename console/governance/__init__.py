"""The governance log: one row per console state change, written by every app's services in
the same transaction as the change (`services.governance_event_record`), each action from
one catalogue (`actions.GovernanceAction`). It sits in the kernel, below the apps, so no app
imports another to write it."""
