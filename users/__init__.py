"""Users in the portal: admins create and invite users, set their roles and reviewer scopes,
deactivate and reactivate them, and issue and revoke their personal API tokens."""
