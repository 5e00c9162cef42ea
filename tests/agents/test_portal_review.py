"""Review before apply in the portal: the YAML editor, the import and a rollback each show a
preview and apply only on Confirm, against the base revision they were previewed on."""

from __future__ import annotations

import pytest
import yaml
from django.contrib.messages import get_messages

from agents import services
from agents.models import ConfigRevision, CustomAgent, Hook
from demo.documents import SEED_CUSTOM_AGENT_YAML
from tests.agents.review_steps import confirm_fields

YAML_URL = "/agents/sre-agent/custom/my_hooked_agent/yaml/"
IMPORT_URL = "/agents/sre-agent/import/"


def _seed(agent):
    services.custom_agent_put(
        actor=None,
        agent=agent,
        name="my_hooked_agent",
        document=yaml.safe_load(SEED_CUSTOM_AGENT_YAML),
    )


def _edited(**changes):
    document = yaml.safe_load(SEED_CUSTOM_AGENT_YAML)
    document["spec"]["hooks"]["PostToolUse"][0]["timeout"] = changes.get("timeout", 90)
    document["spec"]["hooks"]["PostToolUse"][0]["failMode"] = "allow"
    document["spec"]["hooks"]["PreToolUse"] = [{"type": "approval", "matcher": "deploy"}]
    del document["spec"]["hooks"]["Stop"]
    return yaml.safe_dump(document)


def _timeouts(agent):
    return [
        h.definition.get("timeout") for h in Hook.objects.filter(agent=agent, event="PostToolUse")
    ]


def _revisions():
    return ConfigRevision.objects.count()


# The YAML editor -----------------------------------------------------------------------------


@pytest.mark.django_db
def test_saving_the_editor_previews_the_diff_and_writes_nothing(admin_client, sre):
    _seed(sre.agent)
    before = _revisions()
    response = admin_client.post(YAML_URL, {"text": _edited()})
    assert response.status_code == 200
    diff = response.context["preview"].diff
    assert (diff.added, diff.removed, diff.changed) == (1, 1, 1)
    (changed,) = [c for c in diff.hooks if c.kind == "changed"]
    assert {(f.name, f.before, f.after) for f in changed.fields} == {
        ("timeout", 30, 90),
        ("failMode", "block", "allow"),
    }
    html = response.content.decode()
    assert "Confirm and apply" in html and "Cancel" in html and "Nothing has been applied" in html
    assert _revisions() == before and _timeouts(sre.agent) == [30]


@pytest.mark.django_db
def test_confirm_applies_exactly_the_previewed_document(admin_client, sre):
    _seed(sre.agent)
    preview = admin_client.post(YAML_URL, {"text": _edited()})
    response = admin_client.post(YAML_URL, confirm_fields(preview))
    assert response.status_code == 302 and response.url == YAML_URL
    assert _timeouts(sre.agent) == [90]
    hooks = Hook.objects.filter(custom_agent__name="my_hooked_agent")
    assert sorted(h.event for h in hooks) == ["PostToolUse", "PreToolUse"]
    latest = ConfigRevision.objects.order_by("-number")[0]
    assert latest.number == preview.context["preview"].base_revision + 1


@pytest.mark.django_db
def test_cancel_returns_to_the_editor_with_the_text_and_writes_nothing(admin_client, sre):
    _seed(sre.agent)
    preview = admin_client.post(YAML_URL, {"text": _edited()})
    before = _revisions()
    response = admin_client.post(YAML_URL, {**confirm_fields(preview), "step": "cancel"})
    assert response.status_code == 200 and "preview" not in response.context
    assert response.context["form"]["text"].value() == _edited()
    assert _revisions() == before and _timeouts(sre.agent) == [30]


@pytest.mark.django_db
def test_confirm_after_the_configuration_moved_is_refused_and_shows_the_new_diff(admin_client, sre):
    _seed(sre.agent)
    preview = admin_client.post(YAML_URL, {"text": _edited()})
    base = preview.context["preview"].base_revision
    custom_agent = CustomAgent.objects.get(name="my_hooked_agent")
    services.custom_agent_update(
        actor=None,
        custom_agent=custom_agent,
        instructions="Changed meanwhile.",
        handoff_description="",
        enable_vanilla_mode=False,
    )
    response = admin_client.post(YAML_URL, confirm_fields(preview))
    assert response.status_code == 200
    assert f"revision {base} → {base + 1}" in response.context["moved"]
    assert "Nothing was applied" in response.content.decode()
    assert response.context["preview"].base_revision == base + 1
    assert "instructions" in [f.name for f in response.context["preview"].diff.settings]
    assert _timeouts(sre.agent) == [30]
    again = admin_client.post(YAML_URL, confirm_fields(response))
    assert again.status_code == 302 and _timeouts(sre.agent) == [90]


@pytest.mark.django_db
def test_an_unchanged_document_says_nothing_to_apply(admin_client, sre):
    _seed(sre.agent)
    text = admin_client.get(YAML_URL).context["form"]["text"].value()
    before = _revisions()
    response = admin_client.post(YAML_URL, {"text": text})
    assert response.status_code == 200 and "preview" not in response.context
    assert "Nothing to apply" in response.content.decode()
    assert _revisions() == before


@pytest.mark.django_db
def test_confirm_without_a_base_revision_only_previews(admin_client, sre):
    _seed(sre.agent)
    response = admin_client.post(YAML_URL, {"text": _edited(), "step": "confirm"})
    assert response.status_code == 200 and "preview" in response.context
    assert _timeouts(sre.agent) == [30]


@pytest.mark.django_db
def test_over_htmx_the_preview_and_cancel_are_partials(admin_client, sre):
    _seed(sre.agent)
    preview = admin_client.post(YAML_URL, {"text": _edited()}, HTTP_HX_REQUEST="true")
    html = preview.content.decode()
    assert html.lstrip().startswith('<section class="card review-card" id="review"')
    assert 'hx-post="/agents/sre-agent/custom/my_hooked_agent/yaml/"' in html
    cancel = admin_client.post(
        YAML_URL, {**confirm_fields(preview), "step": "cancel"}, HTTP_HX_REQUEST="true"
    )
    assert cancel.content.decode().lstrip().startswith('<form id="yaml-form"')
    confirm = admin_client.post(YAML_URL, confirm_fields(preview), HTTP_HX_REQUEST="true")
    assert confirm["HX-Redirect"] == YAML_URL and _timeouts(sre.agent) == [90]


@pytest.mark.django_db
def test_warnings_are_a_separate_warning_message_not_part_of_the_success(admin_client, sre):
    _seed(sre.agent)
    document = yaml.safe_load(SEED_CUSTOM_AGENT_YAML)
    document["spec"]["hooks"]["Stop"][0]["matcher"] = "Bash"  # no effect on Stop: a warning
    preview = admin_client.post(YAML_URL, {"text": yaml.safe_dump(document)})
    assert "matcher has no effect on Stop hooks" in preview.content.decode()
    response = admin_client.post(YAML_URL, confirm_fields(preview))
    levels = {m.level_tag: m.message for m in get_messages(response.wsgi_request)}
    assert levels["success"] == "Saved the document of my_hooked_agent."
    assert "matcher has no effect" in levels["warning"]


# Import ------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_import_of_a_new_custom_agent_previews_its_creation(admin_client, sre):
    response = admin_client.post(IMPORT_URL, {"text": SEED_CUSTOM_AGENT_YAML})
    diff = response.context["preview"].diff
    assert diff.created and diff.added == 2
    assert "new custom agent" in response.content.decode()
    assert not CustomAgent.objects.exists()
    confirm = admin_client.post(IMPORT_URL, confirm_fields(response))
    assert confirm.url == "/agents/sre-agent/custom/my_hooked_agent/"
    assert Hook.objects.filter(custom_agent__name="my_hooked_agent").count() == 2


@pytest.mark.django_db
def test_import_cancel_keeps_the_pasted_document_in_the_form(admin_client, sre):
    preview = admin_client.post(IMPORT_URL, {"text": SEED_CUSTOM_AGENT_YAML})
    response = admin_client.post(IMPORT_URL, {**confirm_fields(preview), "step": "cancel"})
    assert response.status_code == 200
    assert response.context["import_form"]["text"].value() == SEED_CUSTOM_AGENT_YAML
    assert not CustomAgent.objects.exists()


@pytest.mark.django_db
def test_import_confirm_is_refused_when_the_custom_agent_appeared_meanwhile(admin_client, sre):
    preview = admin_client.post(IMPORT_URL, {"text": SEED_CUSTOM_AGENT_YAML})
    assert preview.context["preview"].base_revision == 0
    services.custom_agent_create(actor=None, agent=sre.agent, name="my_hooked_agent")
    response = admin_client.post(IMPORT_URL, confirm_fields(preview))
    assert response.status_code == 200 and "Nothing was applied" in response.context["moved"]
    assert not response.context["preview"].diff.created
    assert not Hook.objects.exists()


@pytest.mark.django_db
def test_importing_the_current_document_says_nothing_to_apply(admin_client, sre):
    _seed(sre.agent)
    before = _revisions()
    response = admin_client.post(IMPORT_URL, {"text": SEED_CUSTOM_AGENT_YAML})
    assert "Nothing to apply" in response.content.decode() and _revisions() == before


# Rollback ----------------------------------------------------------------------------------


def _two_revisions(agent):
    services.hook_create(
        actor=None, agent=agent, custom_agent=None, event="Stop", raw={"prompt": "First?"}
    )
    keep = ConfigRevision.objects.order_by("-number")[0].number
    services.hook_create(
        actor=None,
        agent=agent,
        custom_agent=None,
        event="PostToolUse",
        raw={"type": "command", "matcher": "Bash", "command": "exit 0"},
    )
    services.agent_set_mode(actor=None, agent=agent, mode="evaluate_only")
    return keep, f"/agents/{agent.slug}/history/{keep}/rollback/"


@pytest.mark.django_db
def test_rollback_previews_the_removed_hook_and_the_mode(admin_client, sre):
    keep, url = _two_revisions(sre.agent)
    before = _revisions()
    response = admin_client.post(url)
    assert response.status_code == 200
    diff = response.context["preview"].diff
    assert [(c.kind, c.event) for c in diff.hooks] == [("removed", "PostToolUse")]
    assert [(f.name, f.before, f.after) for f in diff.settings] == [
        ("mode", "evaluate_only", "enforce")
    ]
    assert f"to revision {keep}" in response.content.decode()
    assert _revisions() == before and Hook.objects.filter(agent=sre.agent).count() == 2


@pytest.mark.django_db
def test_rollback_cancel_changes_nothing(admin_client, sre):
    _keep, url = _two_revisions(sre.agent)
    preview = admin_client.post(url)
    before = _revisions()
    response = admin_client.post(url, {**confirm_fields(preview), "step": "cancel"})
    assert response.status_code == 302 and response.url == "/agents/sre-agent/history/"
    partial = admin_client.post(url, {"step": "cancel"}, HTTP_HX_REQUEST="true")
    assert partial.content.decode().lstrip().startswith('<section class="card revision-card"')
    assert _revisions() == before and Hook.objects.filter(agent=sre.agent).count() == 2


@pytest.mark.django_db
def test_rollback_confirm_restores_and_a_moved_base_is_refused(admin_client, sre):
    keep, url = _two_revisions(sre.agent)
    preview = admin_client.post(url)
    services.agent_set_mode(actor=None, agent=sre.agent, mode="enforce")
    refused = admin_client.post(url, confirm_fields(preview))
    assert refused.status_code == 200 and "Nothing was applied" in refused.context["moved"]
    assert refused.context["preview"].diff.settings == []  # the mode is already back
    assert Hook.objects.filter(agent=sre.agent).count() == 2
    done = admin_client.post(url, confirm_fields(refused))
    assert done.status_code == 302
    assert [h.event for h in Hook.objects.filter(agent=sre.agent)] == ["Stop"]
    latest = ConfigRevision.objects.order_by("-number")[0]
    assert latest.action == "revision.rolled_back"


@pytest.mark.django_db
def test_rolling_back_to_an_equal_configuration_says_nothing_to_apply(admin_client, sre):
    keep, url = _two_revisions(sre.agent)
    services.revision_rollback(actor=None, revision=ConfigRevision.objects.get(number=keep))
    before = _revisions()
    response = admin_client.post(url, follow=True)
    assert "Nothing to apply" in response.content.decode()
    assert _revisions() == before
