"""Writes of the user pages: create (invite), roles and reviewer scope, deactivate and
reactivate, invitation links and personal API tokens.

Every input is checked before anything is written (`UserProblems` names the field); every
change writes its governance event in the same transaction; open reviewer sockets re-check
their access after commit (approvals.live). Changes that could leave the console without an
admin take a lock on the admin role first, so two admins demoting each other at the same
moment cannot both succeed.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import password_validation
from django.contrib.auth.models import Group, User
from django.contrib.auth.tokens import default_token_generator
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from agents.models import Agent
from agents.selectors import agents_by_slug
from approvals import live
from approvals import services as approval_services
from approvals.selectors import reviewer_scopes, slack_member_of
from approvals.validation import InvalidInput
from console import services as console_services
from console.actors import Actor
from console.governance.actions import GovernanceAction
from console.governance.services import governance_event_record
from console.models import ApiToken
from console.roles import Role
from console.sessions import sessions_end_for_user

USERNAME_MAX = 150
TOKEN_NAME_MAX = 100


class UserProblems(Exception):
    """Refused input: messages by form field ("" for the form as a whole)."""

    def __init__(self, problems: dict[str, list[str]]) -> None:
        super().__init__("; ".join(f"{k or 'form'}: {' '.join(v)}" for k, v in problems.items()))
        self.problems = problems


@dataclass(frozen=True)
class CreatedUser:
    user: User
    invitation_path: str | None  # shown once when no password was set


@dataclass(frozen=True)
class Deactivation:
    sessions_ended: int
    tokens_revoked: int


def _check(problems: dict[str, list[str]]) -> None:
    found = {field: [m for m in messages if m] for field, messages in problems.items()}
    found = {field: messages for field, messages in found.items() if messages}
    if found:
        raise UserProblems(found)


def user_roles(user: User) -> list[str]:
    names = set(user.groups.values_list("name", flat=True))
    return [role for role in Role.values if role in names]


def _roles_problems(roles: list[str]) -> list[str]:
    unknown = [role for role in roles if role not in Role.values]
    if unknown:
        return [f"Unknown role {', '.join(unknown)}: choose from {', '.join(Role.values)}."]
    if not roles:
        return ["Choose at least one role."]
    return []


def _scope_agents(
    slugs: list[str], roles: list[str], problems: dict[str, list[str]]
) -> list[Agent]:
    """The agents named by `slugs` (a reviewer scope); problems land on the `agents` field."""
    agents = agents_by_slug(slugs)
    missing = sorted(set(slugs) - {agent.slug for agent in agents})
    if missing:
        problems["agents"] = [f"No agent named {', '.join(missing)}."]
    elif slugs and roles and (Role.ADMIN in roles or Role.REVIEWER not in roles):
        problems["agents"] = [
            "Only reviewers can be limited to some agents (admins review for every agent)."
        ]
    return agents


def _username_problems(username: str) -> list[str]:
    if not username:
        return ["Enter a username."]
    if len(username) > USERNAME_MAX:
        return [f"At most {USERNAME_MAX} characters."]
    try:
        UnicodeUsernameValidator()(username)
    except ValidationError as exc:
        return list(exc.messages)
    if User.objects.filter(username__iexact=username).exists():
        return [f"A user named {username} already exists."]
    return []


def _set_roles(user: User, roles: list[str]) -> None:
    groups = {name: Group.objects.get_or_create(name=name)[0] for name in Role.values}
    user.groups.remove(*groups.values())
    user.groups.add(*(groups[role] for role in roles))
    user.__dict__.pop("_console_groups", None)  # console.roles caches a user's groups


def _is_self(actor: Actor | None, user: User) -> bool:
    return actor is not None and actor.pk is not None and actor.pk == user.pk


def _is_admin_row(user: User) -> bool:
    return user.is_active and (user.is_superuser or Role.ADMIN in user_roles(user))


def _last_admin_problem(user: User) -> str:
    """Lock the admin role, then: a message if `user` is the only active admin left."""
    Group.objects.get_or_create(name=Role.ADMIN)
    Group.objects.select_for_update().get(name=Role.ADMIN)
    others = (
        User.objects.filter(Q(is_superuser=True) | Q(groups__name=Role.ADMIN), is_active=True)
        .exclude(pk=user.pk)
        .exists()
    )
    if _is_admin_row(user) and not others:
        return f"{user.username} is the last active admin: make someone else an admin first."
    return ""


@transaction.atomic
def user_create(
    *,
    actor: Actor | None,
    username: str,
    roles: list[str],
    agent_slugs: list[str],
    password: str = "",
) -> CreatedUser:
    """A new active user in `roles`. Without a password they get an invitation link (shown
    once) to choose one; nobody can sign in as them before that."""
    username = username.strip()
    problems: dict[str, list[str]] = {"roles": _roles_problems(roles)}
    problems["username"] = _username_problems(username)
    if password:
        try:
            password_validation.validate_password(password, User(username=username))
        except ValidationError as exc:
            problems["password"] = list(exc.messages)
    agents = _scope_agents(agent_slugs, roles, problems)
    _check(problems)

    user = User.objects.create_user(username=username, password=password or None)
    _set_roles(user, roles)
    governance_event_record(
        actor=actor,
        action=GovernanceAction.USER_CREATED,
        summary=f"Created user {username} as {', '.join(roles)}",
        target=user,
        after={"roles": roles, "agents": [agent.slug for agent in agents]},
    )
    if agents:
        approval_services.reviewer_scope_set(actor=actor, user=user, agents=agents)
    invitation = None if password else user_invitation_issue(actor=actor, user=user)
    return CreatedUser(user=user, invitation_path=invitation)


@transaction.atomic
def user_update(
    *, actor: Actor | None, user: User, roles: list[str], agent_slugs: list[str]
) -> bool:
    """Set `user`'s roles and reviewer scope; False when nothing changed."""
    problems: dict[str, list[str]] = {"roles": _roles_problems(roles)}
    agents = _scope_agents(agent_slugs, roles, problems)
    _check(problems)
    before_roles = user_roles(user)
    loses_admin = Role.ADMIN in before_roles and Role.ADMIN not in roles
    if loses_admin and _is_self(actor, user) and not user.is_superuser:
        problems["roles"] = ["You cannot take away your own admin role: ask another admin."]
    elif loses_admin and not user.is_superuser:
        problems["roles"] = [_last_admin_problem(user)]
    _check(problems)  # an empty message: not the last admin

    before_agents = reviewer_scopes([user.pk]).get(user.pk, [])
    after_agents = [agent.slug for agent in agents]
    if before_roles != roles:
        _set_roles(user, roles)
        governance_event_record(
            actor=actor,
            action=GovernanceAction.USER_ROLE_SET,
            summary=f"Set the roles of {user.username} to {', '.join(roles)}",
            target=user,
            before={"roles": before_roles},
            after={"roles": roles},
        )
        live.on_commit_access_changed(user.pk)
    if before_agents != after_agents:
        approval_services.reviewer_scope_set(actor=actor, user=user, agents=agents)
    return before_roles != roles or before_agents != after_agents


@transaction.atomic
def user_deactivate(*, actor: Actor | None, user: User) -> Deactivation:
    """Nobody can sign in as `user` any more: their sessions are deleted, their personal
    tokens revoked and their open reviewer sockets closed (after commit)."""
    if _is_self(actor, user):
        raise UserProblems({"": ["You cannot deactivate yourself: ask another admin."]})
    if not user.is_active:
        raise UserProblems({"": [f"{user.username} is already deactivated."]})
    problem = _last_admin_problem(user)
    if problem:
        raise UserProblems({"": [problem]})
    User.objects.filter(pk=user.pk).update(is_active=False)
    user.is_active = False
    now = timezone.now()
    live_tokens = ApiToken.objects.filter(user=user, revoked_at__isnull=True)
    revoked = sorted(live_tokens.values_list("prefix", flat=True))
    live_tokens.update(revoked_at=now)
    ended = sessions_end_for_user(user.pk)
    governance_event_record(
        actor=actor,
        action=GovernanceAction.USER_DEACTIVATED,
        summary=f"Deactivated {user.username}: {ended} session(s) ended, "
        f"{len(revoked)} API token(s) revoked",
        target=user,
        before={"is_active": True},
        after={"is_active": False, "sessions_ended": ended, "tokens_revoked": revoked},
    )
    live.on_commit_access_changed(user.pk)
    return Deactivation(sessions_ended=ended, tokens_revoked=len(revoked))


@transaction.atomic
def user_reactivate(*, actor: Actor | None, user: User) -> None:
    """`user` may sign in again with their password (tokens revoked at deactivation stay
    revoked: issue new ones)."""
    if user.is_active:
        raise UserProblems({"": [f"{user.username} is already active."]})
    User.objects.filter(pk=user.pk).update(is_active=True)
    user.is_active = True
    governance_event_record(
        actor=actor,
        action=GovernanceAction.USER_REACTIVATED,
        summary=f"Reactivated {user.username}",
        target=user,
        before={"is_active": False},
        after={"is_active": True},
    )


@transaction.atomic
def user_invitation_issue(*, actor: Actor | None, user: User) -> str:
    """The path of a one-time link where `user` chooses a password (Django's password reset:
    it stops working once used, once they sign in, and after PASSWORD_RESET_TIMEOUT)."""
    if not user.is_active:
        raise UserProblems({"": [f"{user.username} is deactivated: reactivate them first."]})
    path = reverse(
        "password_reset_confirm",
        args=[
            urlsafe_base64_encode(force_bytes(user.pk)),
            default_token_generator.make_token(user),
        ],
    )
    governance_event_record(
        actor=actor,
        action=GovernanceAction.USER_INVITATION_ISSUED,
        summary=f"Issued a sign-in link for {user.username}",
        target=user,
    )
    return path


def user_slack_set(*, actor: Actor | None, user: User, slack_user_id: str) -> bool:
    """Link `user` to a Slack member ("" unlinks); False when it already was so."""
    before = slack_member_of(user)
    try:
        approval_services.slack_identity_set(actor=actor, user=user, slack_user_id=slack_user_id)
    except InvalidInput as exc:
        raise UserProblems(
            {"slack_user_id": [m for ms in exc.fields.values() for m in ms]}
        ) from None
    return before != slack_user_id.strip()


def personal_token_issue(
    *, actor: Actor | None, user: User, name: str
) -> console_services.IssuedApiToken:
    """A new personal API token for `user` (with their role's rights); shown once."""
    name = name.strip()
    problems: dict[str, list[str]] = {}
    if not name:
        problems["name"] = ["Name the token after what will use it, e.g. ci-export."]
    elif len(name) > TOKEN_NAME_MAX:
        problems["name"] = [f"At most {TOKEN_NAME_MAX} characters."]
    if not user.is_active:
        problems[""] = [f"{user.username} is deactivated: reactivate them first."]
    _check(problems)
    return console_services.api_token_issue(actor=actor, user=user, name=name)
