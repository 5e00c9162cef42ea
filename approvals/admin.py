"""Django admin: escalations are read-only records (cancel is the one action, via the service);
reviewer scopes are written through the service so each change is audited."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from approvals import services
from approvals.models import Escalation, EscalationVote, ReviewerScope
from console.actors import request_actor

if TYPE_CHECKING:
    VoteInlineBase = admin.TabularInline[EscalationVote, Escalation]
    EscalationAdminBase = admin.ModelAdmin[Escalation]
    ScopeAdminBase = admin.ModelAdmin[ReviewerScope]
else:
    VoteInlineBase = admin.TabularInline
    EscalationAdminBase = ScopeAdminBase = admin.ModelAdmin


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
            except (services.DecisionConflict, services.DecisionForbidden) as exc:
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
