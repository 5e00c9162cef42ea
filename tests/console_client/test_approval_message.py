"""What reviewers read about why a call waits for them names the hook as admins named it."""

from __future__ import annotations

from console_client.evaluation import approval_verdict

CONTEXT = {"tool_call": {"name": "restart_service", "arguments": {}}}


def test_the_message_names_the_hook_by_its_name():
    hook = {"type": "approval", "matcher": "restart_service", "name": "Restart guard"}
    verdict = approval_verdict(key="hk_0123456789ab", hook=hook, context=CONTEXT)
    assert verdict.message == "restart_service needs a reviewer's approval (hook “Restart guard”)."
    assert verdict.approval is not None and verdict.approval["hook"] == "hk_0123456789ab"


def test_a_declaration_without_names_falls_back_to_the_key():
    hook = {"type": "approval", "matcher": "restart_service"}
    verdict = approval_verdict(key="hk_0123456789ab", hook=hook, context=CONTEXT)
    assert verdict.message == "restart_service needs a reviewer's approval (hook hk_0123456789ab)."


def test_a_shadow_hook_says_it_would_have_asked():
    hook = {"type": "approval", "matcher": "*", "name": "Everything", "mode": "shadow"}
    verdict = approval_verdict(key="hk_0123456789ab", hook=hook, context=CONTEXT)
    assert verdict.approval is None and verdict.message is None  # nobody is asked
    [warning] = verdict.warnings
    assert warning.message == (
        "restart_service would have needed a reviewer's approval (hook “Everything”, shadow)."
    )
