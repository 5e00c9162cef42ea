"""Writes of the console app: users in roles and their personal API tokens."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import Group, User
from django.db import transaction
from django.utils import timezone

from console.actors import Actor
from console.governance.actions import GovernanceAction
from console.governance.services import governance_event_record
from console.models import ApiToken
from console.roles import Role
from console.tokens import PERSONAL_TOKEN_KIND, token_generate


@dataclass(frozen=True)
class IssuedApiToken:
    token: ApiToken
    plaintext: str


@transaction.atomic
def user_set_role(
    *, actor: Actor | None, username: str, role: str, password: str | None = None
) -> User:
    if role not in Role.values:
        raise ValueError(f"role must be one of {', '.join(Role.values)}")
    user, created = User.objects.get_or_create(username=username)
    if password:
        user.set_password(password)
    elif created:
        user.set_unusable_password()
    if password or created:
        user.save(update_fields=["password"])
    groups = [Group.objects.get_or_create(name=name)[0] for name in Role.values]
    user.groups.remove(*groups)
    user.groups.add(Group.objects.get(name=role))
    governance_event_record(
        actor=actor,
        action=GovernanceAction.USER_CREATED if created else GovernanceAction.USER_ROLE_SET,
        summary=f"{'Created' if created else 'Updated'} user {username} as {role}",
        target=user,
    )
    return user


@transaction.atomic
def api_token_issue(*, actor: Actor | None, user: User, name: str = "default") -> IssuedApiToken:
    new = token_generate(PERSONAL_TOKEN_KIND)
    token = ApiToken.objects.create(user=user, name=name, prefix=new.prefix, digest=new.digest)
    governance_event_record(
        actor=actor,
        action=GovernanceAction.TOKEN_ISSUED,
        summary=f"Issued API token {name} for {user.username}",
        target=token,
    )
    return IssuedApiToken(token=token, plaintext=new.plaintext)


@transaction.atomic
def api_token_revoke(*, actor: Actor | None, token: ApiToken) -> bool:
    """Revoke `token` at once (the API answers 401 to it from now on); False if it already was."""
    now = timezone.now()
    if not ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=now):
        return False
    token.revoked_at = now
    governance_event_record(
        actor=actor,
        action=GovernanceAction.TOKEN_REVOKED,
        summary=f"Revoked API token {token.name} ({token.prefix}…) of {token.user.username}",
        target=token,
    )
    return True
