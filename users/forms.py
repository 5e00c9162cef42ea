"""Forms of the user pages: they only parse; users.services checks the input and its
UserProblems land on the fields they name."""

from __future__ import annotations

from typing import Any

from django import forms

from console.roles import Role
from users.services import UserProblems

ROLE_HELP = (
    "Admin: everything, including these pages. Reviewer: decides escalations. "
    "Auditor: reads records and the governance log."
)


class ProblemsForm(forms.Form):
    def add_problems(self, exc: UserProblems) -> None:
        for name, messages in exc.problems.items():
            for message in messages:
                self.add_error(name if name in self.fields else None, message)


class RolesForm(ProblemsForm):
    roles = forms.MultipleChoiceField(
        choices=Role.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text=ROLE_HELP,
    )
    agents = forms.MultipleChoiceField(
        label="Reviewer scope",
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="A reviewer decides only for the agents ticked here; none ticked: every agent.",
    )

    def __init__(self, *args: Any, agents: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["agents"].choices = [(slug, slug) for slug in agents]  # type: ignore[attr-defined]


class UserCreateForm(RolesForm):
    username = forms.CharField(max_length=200, required=False, strip=False)
    password = forms.CharField(
        required=False,
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text="Leave empty to get a one-time link where they choose their own.",
    )

    field_order = ["username", "roles", "agents", "password"]


class SlackForm(ProblemsForm):
    slack_user_id = forms.CharField(
        label="Slack member ID",
        max_length=64,
        required=False,
        help_text="Their clicks on Approve/Reject in Slack then act as them. Empty: unlinked.",
    )


class TokenForm(ProblemsForm):
    name = forms.CharField(
        max_length=200, required=False, help_text="What will use it, e.g. ci-export."
    )
