"""The portal speaks one web dialect (console/web.py):

1. `HtmxHttpRequest` is defined once, in console/web.py.
2. Portal view modules gate with `role_required(...)`: they define no gate of their own
   (`*_required`, `_require_*`) and call no role predicate (`is_admin`, `is_reviewer`,
   `is_auditor`, `has_role`) in their bodies.
3. API views check roles only through DRF permission classes: no role predicate and no
   `.has_permission(...)` call inside an API view class (permission classes themselves may).

Modules are read with `ast`, like tests/console/test_import_rules.py.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("agents", "approvals", "audit", "console", "runtimes")
KIT = "console/web.py"
ROLE_PREDICATES = frozenset({"is_admin", "is_reviewer", "is_auditor", "has_role"})
PERMISSION_BASES = frozenset({"BasePermission"})


def _modules() -> Iterator[tuple[str, ast.Module]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in path.parts:
                name = path.relative_to(ROOT).as_posix()
                yield name, ast.parse(path.read_text(encoding="utf-8"))


def _called_name(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _is_portal_views(name: str, tree: ast.Module) -> bool:
    if name == KIT:
        return False
    stem = name.rsplit("/", 1)[-1]
    imports_kit = any(
        isinstance(node, ast.ImportFrom) and node.module == "console.web" for node in ast.walk(tree)
    )
    return imports_kit or (stem.startswith("views") and name != "runtimes/views.py")


def _is_api_view_class(node: ast.ClassDef) -> bool:
    bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
    return not bases & PERMISSION_BASES and any(
        base.endswith(("APIView", "View", "Api")) for base in bases
    )


def htmx_request_definitions(name: str, tree: ast.Module) -> list[str]:
    return [
        f"{name}:{node.lineno} defines HtmxHttpRequest"
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and node.name == "HtmxHttpRequest" and name != KIT
    ]


def portal_role_checks(name: str, tree: ast.Module) -> list[str]:
    if not _is_portal_views(name, tree):
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and (
            node.name.endswith("_required") or node.name.startswith("_require_")
        ):
            found.append(f"{name}:{node.lineno} defines its own gate {node.name}")
        elif isinstance(node, ast.Call) and _called_name(node) in ROLE_PREDICATES:
            found.append(f"{name}:{node.lineno} checks a role inline ({_called_name(node)})")
    return found


def api_body_role_checks(name: str, tree: ast.Module) -> list[str]:
    found = []
    for cls in ast.walk(tree):
        if not (isinstance(cls, ast.ClassDef) and _is_api_view_class(cls)):
            continue
        for node in ast.walk(cls):
            called = _called_name(node) if isinstance(node, ast.Call) else ""
            if called in ROLE_PREDICATES | {"has_permission"}:
                found.append(f"{name}:{node.lineno} {cls.name} checks a role in its body")
    return found


def test_htmx_request_type_is_defined_once_in_the_kit() -> None:
    found = [line for name, tree in _modules() for line in htmx_request_definitions(name, tree)]
    assert found == []
    assert "class HtmxHttpRequest" in (ROOT / KIT).read_text(encoding="utf-8")


def test_portal_views_gate_only_with_role_required() -> None:
    found = [line for name, tree in _modules() for line in portal_role_checks(name, tree)]
    assert found == []


def test_api_views_check_roles_only_in_permission_classes() -> None:
    found = [line for name, tree in _modules() for line in api_body_role_checks(name, tree)]
    assert found == []


def test_the_portal_view_modules_are_found() -> None:
    # The rules above would pass vacuously if the scan found no view module.
    portal = {name for name, tree in _modules() if _is_portal_views(name, tree)}
    assert {"agents/views.py", "approvals/views.py", "audit/views.py"} <= portal
    assert "runtimes/portal.py" in portal


BAD_VIEWS = """
from console.roles import is_admin

class HtmxHttpRequest(HttpRequest):
    htmx: object

def reviewer_required(view):
    return view

def page(request):
    if not is_admin(request.user):
        raise PermissionDenied
"""

BAD_API = """
class ThingApi(APIView):
    def post(self, request):
        if not IsReviewer().has_permission(request, self):
            raise forbidden("no")

class _Fine(BasePermission):
    def has_permission(self, request, view):
        return is_reviewer(request.user)
"""


def test_the_rules_catch_each_kind_of_violation() -> None:
    views = ast.parse(BAD_VIEWS)
    assert htmx_request_definitions("approvals/views.py", views) == [
        "approvals/views.py:4 defines HtmxHttpRequest"
    ]
    assert portal_role_checks("approvals/views.py", views) == [
        "approvals/views.py:7 defines its own gate reviewer_required",
        "approvals/views.py:11 checks a role inline (is_admin)",
    ]
    assert api_body_role_checks("approvals/api.py", ast.parse(BAD_API)) == [
        "approvals/api.py:4 ThingApi checks a role in its body"
    ]
