"""Custom agents in the portal: create, settings, delete, the YAML tab, import and export."""

from __future__ import annotations

import json

import pytest
import yaml
from django.core.files.uploadedfile import SimpleUploadedFile

from agents import services
from agents.models import ConfigRevision, CustomAgent, Hook
from demo.documents import SEED_CUSTOM_AGENT_YAML
from tests.agents.review_steps import preview_then_confirm


def _seeded(agent):
    custom_agent, _, _ = services.custom_agent_put(
        actor=None,
        agent=agent,
        name="my_hooked_agent",
        document=yaml.safe_load(SEED_CUSTOM_AGENT_YAML),
    )
    return custom_agent


@pytest.mark.django_db
def test_create_custom_agent_from_the_form(admin_client, sre):
    response = admin_client.post(
        "/agents/sre-agent/custom/",
        {
            "name": "triage",
            "instructions": "Sort incidents.",
            "handoff_description": "Hands off triage.",
            "enable_vanilla_mode": "on",
        },
    )
    assert response.status_code == 302
    assert response.url == "/agents/sre-agent/custom/triage/"
    custom_agent = CustomAgent.objects.get(agent=sre.agent, name="triage")
    assert custom_agent.instructions == "Sort incidents."
    assert custom_agent.handoff_description == "Hands off triage."
    assert custom_agent.enable_vanilla_mode


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "fragment"), [("bad name!", "name must be"), ("triage", "already has")]
)
def test_bad_or_taken_name_is_shown_on_the_name_field(admin_client, sre, name, fragment):
    services.custom_agent_create(actor=None, agent=sre.agent, name="triage")
    response = admin_client.post(
        "/agents/sre-agent/custom/", {"name": name}, HTTP_HX_REQUEST="true"
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<form id="custom-agent-form"')
    assert fragment in " ".join(response.context["form"].errors["name"])
    assert CustomAgent.objects.filter(agent=sre.agent).count() == 1


@pytest.mark.django_db
def test_custom_agents_tab_lists_them_with_hook_counts(admin_client, sre):
    _seeded(sre.agent)
    html = admin_client.get("/agents/sre-agent/custom/").content.decode()
    assert "my_hooked_agent" in html
    assert 'data-label="Hooks">2<' in html


@pytest.mark.django_db
def test_settings_edit_saves_through_the_service(admin_client, sre):
    _seeded(sre.agent)
    url = "/agents/sre-agent/custom/my_hooked_agent/settings/"
    assert admin_client.get(url).context["form"]["instructions"].value().startswith("You are")
    response = admin_client.post(url, {"instructions": "New.", "handoff_description": "h"})
    assert response.status_code == 302
    custom_agent = CustomAgent.objects.get(name="my_hooked_agent")
    assert (custom_agent.instructions, custom_agent.enable_vanilla_mode) == ("New.", False)
    assert Hook.objects.filter(custom_agent=custom_agent).count() == 2


@pytest.mark.django_db
def test_delete_removes_it_and_keeps_its_history_reachable(admin_client, sre):
    _seeded(sre.agent)
    response = admin_client.post("/agents/sre-agent/custom/my_hooked_agent/delete/")
    assert response.url == "/agents/sre-agent/custom/"
    assert not CustomAgent.objects.filter(name="my_hooked_agent").exists()
    assert not Hook.objects.filter(agent=sre.agent).exists()
    listing = admin_client.get("/agents/sre-agent/custom/").content.decode()
    assert "/agents/sre-agent/custom/my_hooked_agent/history/" in listing
    history = admin_client.get("/agents/sre-agent/custom/my_hooked_agent/history/")
    assert history.status_code == 200 and "custom_agent.deleted" in history.content.decode()


@pytest.mark.django_db
def test_yaml_tab_shows_the_full_v2_document(admin_client, sre):
    _seeded(sre.agent)
    response = admin_client.get("/agents/sre-agent/custom/my_hooked_agent/yaml/")
    document = yaml.safe_load(response.context["form"]["text"].value())
    assert document["kind"] == "ExtendedAgent"
    assert document["metadata"] == {"name": "my_hooked_agent"}
    assert document["spec"]["hooks"]["PostToolUse"][0]["failMode"] == "block"
    assert document["spec"]["hooks"]["Stop"][0]["maxRejections"] == 3


@pytest.mark.django_db
def test_yaml_edit_replaces_the_custom_agent_and_its_hooks(admin_client, sre):
    _seeded(sre.agent)
    url = "/agents/sre-agent/custom/my_hooked_agent/yaml/"
    document = yaml.safe_load(admin_client.get(url).context["form"]["text"].value())
    document["spec"]["instructions"] = "Edited in YAML."
    document["spec"]["hooks"]["PostToolUse"][0]["timeout"] = 90
    del document["spec"]["hooks"]["Stop"]
    response = preview_then_confirm(admin_client, url, {"text": yaml.safe_dump(document)})
    assert response.status_code == 302
    custom_agent = CustomAgent.objects.get(name="my_hooked_agent")
    assert custom_agent.instructions == "Edited in YAML."
    hooks = Hook.objects.filter(custom_agent=custom_agent)
    assert [(h.event, h.definition["timeout"]) for h in hooks] == [("PostToolUse", 90)]


@pytest.mark.django_db
def test_invalid_yaml_lists_errors_by_pointer_and_writes_nothing(admin_client, sre):
    _seeded(sre.agent)
    url = "/agents/sre-agent/custom/my_hooked_agent/yaml/"
    document = yaml.safe_load(SEED_CUSTOM_AGENT_YAML)
    document["spec"]["instructions"] = "Should not be saved."
    document["spec"]["hooks"]["PostToolUse"][0]["timeout"] = 301
    document["spec"]["hooks"]["Stop"][0]["bogus"] = 1
    revisions = ConfigRevision.objects.count()
    response = admin_client.post(url, {"text": yaml.safe_dump(document)}, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert html.lstrip().startswith('<form id="yaml-form"')
    assert "<code>/spec/hooks/PostToolUse/0/timeout</code>" in html
    assert "<code>/spec/hooks/Stop/0/bogus</code>" in html
    assert "Nothing was saved" in html
    assert CustomAgent.objects.get(name="my_hooked_agent").instructions.startswith("You are")
    assert ConfigRevision.objects.count() == revisions


@pytest.mark.django_db
def test_yaml_edit_cannot_rename_through_metadata(admin_client, sre):
    _seeded(sre.agent)
    document = yaml.safe_load(SEED_CUSTOM_AGENT_YAML)
    document["metadata"]["name"] = "renamed"
    response = admin_client.post(
        "/agents/sre-agent/custom/my_hooked_agent/yaml/", {"text": yaml.safe_dump(document)}
    )
    assert "/metadata/name" in response.context["form"].pointer_errors
    assert not CustomAgent.objects.filter(name="renamed").exists()


@pytest.mark.django_db
def test_malformed_yaml_is_a_form_error_not_a_500(admin_client, sre):
    _seeded(sre.agent)
    response = admin_client.post(
        "/agents/sre-agent/custom/my_hooked_agent/yaml/", {"text": "spec: [unclosed"}
    )
    assert response.status_code == 200
    assert "Malformed YAML" in " ".join(response.context["form"].non_field_errors())


@pytest.mark.django_db
def test_export_downloads_the_yaml_document(admin_client, sre):
    _seeded(sre.agent)
    response = admin_client.get("/agents/sre-agent/custom/my_hooked_agent/export/")
    assert response["Content-Disposition"] == 'attachment; filename="my_hooked_agent.yaml"'
    assert response["Content-Type"].startswith("application/yaml")
    exported = yaml.safe_load(response.content)
    assert exported["metadata"]["name"] == "my_hooked_agent"
    assert len(exported["spec"]["hooks"]["PostToolUse"]) == 1


@pytest.mark.django_db
def test_import_an_uploaded_yaml_file_creates_the_custom_agent(admin_client, sre):
    upload = SimpleUploadedFile("agent.yaml", SEED_CUSTOM_AGENT_YAML.encode(), "application/yaml")
    response = preview_then_confirm(admin_client, "/agents/sre-agent/import/", {"file": upload})
    assert response.status_code == 302
    assert response.url == "/agents/sre-agent/custom/my_hooked_agent/"
    custom_agent = CustomAgent.objects.get(agent=sre.agent, name="my_hooked_agent")
    assert Hook.objects.filter(custom_agent=custom_agent).count() == 2


@pytest.mark.django_db
def test_import_pasted_json_replaces_an_existing_custom_agent(admin_client, sre):
    _seeded(sre.agent)
    document = yaml.safe_load(SEED_CUSTOM_AGENT_YAML)
    document["spec"]["hooks"] = {"Stop": [{"type": "prompt", "prompt": "Done?"}]}
    response = preview_then_confirm(
        admin_client, "/agents/sre-agent/import/", {"text": json.dumps(document)}
    )
    assert response.status_code == 302
    hooks = Hook.objects.filter(custom_agent__name="my_hooked_agent")
    assert [h.definition["prompt"] for h in hooks] == ["Done?"]
    assert ConfigRevision.objects.filter(action="custom_agent.replaced").exists()


@pytest.mark.django_db
def test_import_export_round_trip_is_equal(admin_client, sre, other):
    _seeded(sre.agent)
    exported = admin_client.get("/agents/sre-agent/custom/my_hooked_agent/export/").content
    upload = SimpleUploadedFile("my_hooked_agent.yaml", exported, "application/yaml")
    imported = preview_then_confirm(admin_client, "/agents/other-agent/import/", {"file": upload})
    assert imported.status_code == 302
    again = admin_client.get("/agents/other-agent/custom/my_hooked_agent/export/").content
    assert yaml.safe_load(again) == yaml.safe_load(exported)


@pytest.mark.django_db
def test_invalid_import_lists_pointers_and_writes_nothing(admin_client, sre):
    document = yaml.safe_load(SEED_CUSTOM_AGENT_YAML)
    document["kind"] = "Agent"
    document["spec"]["hooks"]["PostToolUse"][0]["script"] = "#!/bin/sh\necho\n"
    response = admin_client.post("/agents/sre-agent/import/", {"text": yaml.safe_dump(document)})
    html = response.content.decode()
    assert response.status_code == 200
    assert "<code>/kind</code>" in html
    assert "<code>/spec/hooks/PostToolUse/0/script</code>" in html
    assert not CustomAgent.objects.filter(agent=sre.agent).exists()


@pytest.mark.django_db
def test_import_with_neither_file_nor_text_asks_for_one(admin_client, sre):
    response = admin_client.post("/agents/sre-agent/import/", {"text": "  "})
    assert "Paste a document or choose a file" in response.content.decode()
