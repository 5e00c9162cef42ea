"""Django admin: escalations are read-only records (cancel is the one action, via the service);
reviewer scopes and Slack links are written through the services so each change is audited."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from approvals import services
from approvals.models import Escalation, EscalationVote, ReviewerScope, SlackIdentity
from console.actors import request_actor
from console.errors import DomainError

if TYPE_CHECKING:
    VoteInlineBase = admin.TabularInline[EscalationVote, Escalation]
    EscalationAdminBase = admin.ModelAdmin[Escalation]
    ScopeAdminBase = admin.ModelAdmin[ReviewerScope]
    SlackAdminBase = admin.ModelAdmin[SlackIdentity]
    SlackFormBase = forms.ModelForm[SlackIdentity]
else:
    VoteInlineBase = admin.TabularInline
    EscalationAdminBase = ScopeAdminBase = SlackAdminBase = admin.ModelAdmin
    SlackFormBase = forms.ModelForm


class EscalationVoteInline(VoteInlineBase):
    model = EscalationVote
    extra = 0
    can_delete = False
    readonly_fields = ("reviewer_label", "outcome", "reason", "arguments_edited", "created_at")
    fields = readonly_fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Escalation)
class EscalationAdmin(EscalationAdminBase):
    list_display = ("created_at", "agent", "tool_name", "status", "decided_by_label", "expires_at")
    list_filter = ("status", "agent")
    search_fields = ("tool_name", "session_id", "hook_key", "decided_by_label")
    date_hierarchy = "created_at"
    inlines = [EscalationVoteInline]
    actions = ["cancel_selected"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [field.name for field in Escalation._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.action(description="Cancel the selected pending escalations")
    def cancel_selected(self, request: HttpRequest, queryset: QuerySet[Escalation]) -> None:
        cancelled = 0
        for escalation in queryset:
            try:
                services.escalation_cancel(
                    escalation=escalation,
                    actor=request_actor(request),
                    reason="Cancelled by an admin.",
                )
                cancelled += 1
            except DomainError as exc:
                self.message_user(request, f"{escalation.pk}: {exc}", messages.WARNING)
        self.message_user(request, f"Cancelled {cancelled} escalation(s).")


@admin.register(ReviewerScope)
class ReviewerScopeAdmin(ScopeAdminBase):
    list_display = ("user", "agent", "created_at")
    list_filter = ("agent",)

    def save_model(self, request: HttpRequest, obj: ReviewerScope, form: Any, change: bool) -> None:
        agents = [scope.agent for scope in ReviewerScope.objects.filter(user=obj.user)]
        if obj.agent not in agents:
            agents.append(obj.agent)
        services.reviewer_scope_set(actor=request_actor(request), user=obj.user, agents=agents)
        obj.pk = ReviewerScope.objects.get(user=obj.user, agent=obj.agent).pk

    def delete_model(self, request: HttpRequest, obj: ReviewerScope) -> None:
        agents = [s.agent for s in ReviewerScope.objects.filter(user=obj.user) if s.pk != obj.pk]
        services.reviewer_scope_set(actor=request_actor(request), user=obj.user, agents=agents)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class SlackIdentityForm(SlackFormBase):
    class Meta:
        model = SlackIdentity
        fields = ("user", "slack_user_id")

    def clean_slack_user_id(self) -> str:
        value = str(self.cleaned_data["slack_user_id"]).strip()
        if not services.SLACK_MEMBER_ID.fullmatch(value):
            raise forms.ValidationError("A Slack member ID looks like U012AB3CD (or W…).")
        return value


@admin.register(SlackIdentity)
class SlackIdentityAdmin(SlackAdminBase):
    form = SlackIdentityForm
    list_display = ("user", "slack_user_id", "created_at")
    search_fields = ("user__username", "slack_user_id")

    def save_model(self, request: HttpRequest, obj: SlackIdentity, form: Any, change: bool) -> None:
        saved = services.slack_identity_set(
            actor=request_actor(request), user=obj.user, slack_user_id=obj.slack_user_id
        )
        obj.pk = saved.pk if saved else None

    def delete_model(self, request: HttpRequest, obj: SlackIdentity) -> None:
        services.slack_identity_set(actor=request_actor(request), user=obj.user, slack_user_id="")

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[SlackIdentity]) -> None:
        for identity in queryset.select_related("user"):
            self.delete_model(request, identity)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
