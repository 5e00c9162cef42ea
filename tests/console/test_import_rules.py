"""The layers do not loop: the kernel (`console/`, with the governance log) sits below the
apps, and the agent-side package below everything.

1. No module under console/ imports agents, approvals, audit or users, except the wiring modules
   (settings, urls, routing, asgi), which name the apps to put them together.
2. console_client imports neither Django nor any server package.
3. agents, approvals, audit, users and runtimes may import console (and console_client).
4. Nothing imports the demo (demo/), which sits above the apps.
5. Nothing imports a project package inside `try: … except ImportError`: an app's module is
   always there, so such a guard only hides the dependency.
6. The app graph has no cycle: the edges between packages, computed from the imports (the
   kernel's wiring modules left out, they sit on top), form no loop. `agents` sits right
   above the kernel: it imports no other app; what the agent pages show from audit comes
   through extension points (agents/extensions.py). Nothing but the wiring imports `runtimes`.

Imports are read with `ast` from every file (function-level imports included).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APPS = ("agents", "approvals", "audit", "users", "runtimes")
SERVER = ("console", *APPS)
KERNEL_WIRING = frozenset(
    {"console/settings.py", "console/urls.py", "console/routing.py", "console/asgi.py"}
)


def _files(package: str) -> Iterator[Path]:
    for path in sorted((ROOT / package).rglob("*.py")):
        if "migrations" not in path.parts:
            yield path


def _imports(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module


def _top(module: str) -> str:
    return module.split(".", 1)[0]


def _violations(
    package: str, forbidden: set[str], exempt: frozenset[str] = frozenset()
) -> list[str]:
    found = []
    for path in _files(package):
        name = path.relative_to(ROOT).as_posix()
        if name in exempt:
            continue
        for line, module in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if _top(module) in forbidden:
                found.append(f"{name}:{line} imports {module}")
    return found


def test_the_kernel_imports_no_app_outside_its_wiring_modules() -> None:
    assert _violations("console", set(APPS), exempt=KERNEL_WIRING) == []


def test_the_wiring_modules_exist_so_the_exemption_is_not_stale() -> None:
    assert all((ROOT / name).is_file() for name in KERNEL_WIRING)


def test_the_agent_side_package_imports_neither_django_nor_the_server() -> None:
    assert _violations("console_client", {"django", "rest_framework", "channels", *SERVER}) == []


def test_nothing_imports_the_demo() -> None:
    # demo/ (seed and demo agent commands) sits above the apps; `run_console --demo` starts
    # its command by name.
    found = [v for package in (*SERVER, "console_client") for v in _violations(package, {"demo"})]
    assert found == []


def test_the_governance_log_is_part_of_the_kernel() -> None:
    # The apps write it through console.governance; it imports no app (rule 1 covers it).
    assert (ROOT / "console" / "governance" / "models.py").is_file()
    assert _violations("console/governance", set(APPS)) == []


def _guarded_imports(path: Path) -> Iterator[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try):
            continue
        catches_import_error = any(
            handler.type is not None
            and any(
                isinstance(name, ast.Name) and name.id in {"ImportError", "ModuleNotFoundError"}
                for name in (
                    handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
                )
            )
            for handler in node.handlers
        )
        if catches_import_error:
            for statement in node.body:
                yield from _imports(statement)


def _edges() -> dict[tuple[str, str], str]:
    """(importer, imported) between the project's packages, each with its first import."""
    edges: dict[tuple[str, str], str] = {}
    for package in (*SERVER, "console_client", "demo"):
        for path in _files(package):
            name = path.relative_to(ROOT).as_posix()
            if name in KERNEL_WIRING:
                continue
            for line, module in _imports(ast.parse(path.read_text(encoding="utf-8"))):
                target = _top(module)
                if target != package and target in {*SERVER, "console_client", "demo"}:
                    edges.setdefault((package, target), f"{name}:{line} imports {module}")
    return edges


def _cycles(edges: Iterable[tuple[str, str]]) -> list[list[str]]:
    """Every loop of the graph once, each as the packages along it (first one repeated)."""
    graph: dict[str, set[str]] = {}
    for source, target in edges:
        graph.setdefault(source, set()).add(target)
    found: list[list[str]] = []

    def walk(start: str, node: str, path: list[str]) -> None:
        for target in sorted(graph.get(node, ())):
            if target == start:
                found.append([*path, start])
            elif target > start and target not in path:
                walk(start, target, [*path, target])

    for start in sorted(graph):
        walk(start, start, [start])
    return found


def test_the_app_graph_has_no_cycle() -> None:
    edges = _edges()
    loops = [
        " -> ".join(loop)
        + ": "
        + "; ".join(edges[pair] for pair in zip(loop, loop[1:], strict=False))
        for loop in _cycles(edges)
    ]
    assert loops == []


def test_the_cycle_finder_finds_loops() -> None:
    # The rule above would pass vacuously if the finder missed loops or the scan found no edge.
    assert _cycles([("agents", "audit"), ("audit", "agents"), ("audit", "console")]) == [
        ["agents", "audit", "agents"]
    ]
    assert _cycles([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]) == [["a", "b", "c", "a"]]
    assert {("approvals", "agents"), ("audit", "agents"), ("runtimes", "audit")} <= set(_edges())


def test_agents_imports_no_other_app() -> None:
    assert _violations("agents", {"approvals", "audit", "users", "runtimes"}) == []


def test_only_the_wiring_imports_the_runtime_adapters() -> None:
    found = [
        v
        for package in (*SERVER, "console_client")
        if package != "runtimes"
        for v in _violations(package, {"runtimes"}, exempt=KERNEL_WIRING)
    ]
    assert found == []


def test_no_project_package_is_imported_as_if_it_were_optional() -> None:
    found = [
        f"{path.relative_to(ROOT).as_posix()}:{line} imports {module} under except ImportError"
        for package in (*SERVER, "console_client")
        for path in _files(package)
        for line, module in _guarded_imports(path)
        if _top(module) in {*SERVER, "console_client"}
    ]
    assert found == []


def test_one_way_to_ask_whether_an_actor_is_an_agent() -> None:
    # console.actors.is_agent; the attribute is read nowhere else.
    found = [
        f"{path.relative_to(ROOT).as_posix()}:{node.lineno}"
        for package in SERVER
        for path in _files(package)
        if path.relative_to(ROOT).as_posix() != "console/actors.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if (isinstance(node, ast.Attribute) and node.attr == "is_agent")
        or (isinstance(node, ast.Constant) and node.value == "is_agent")
    ]
    assert found == []
