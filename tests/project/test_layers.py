"""The layer table of docs/architecture.md, as code: no module imports from a layer
above its own, the worker half (``_v8``) imports nothing of the package outside itself
(nor trio, nor attrs), a worker process imports only the worker half, and the package
has no import circle (type-only imports included)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "code_mode"

#: Each layer, bottom first, and the layers it may import from (itself included).
LAYERS: dict[str, set[str]] = {
    # What runs inside a worker process: nothing of code_mode outside itself.
    "worker half": {"worker half"},
    "vocabulary": {"vocabulary"},
    "engine": {"vocabulary", "worker half", "engine"},
    "cell": {"vocabulary", "engine", "cell"},
    "session runtime": {"vocabulary", "engine", "cell", "session runtime"},
    # Pure data: what exec/wait look like to a model. Nothing here touches a session.
    "model tools": {"vocabulary", "model tools"},
    "tool sources": {"vocabulary", "model tools", "tool sources"},
    "facade": {"vocabulary", "engine", "session runtime", "model tools", "tool sources", "facade"},
    # The public package: the library's names, from the layers that define them.
    "package": {
        "vocabulary",
        "engine",
        "session runtime",
        "model tools",
        "tool sources",
        "facade",
        "package",
    },
    "mcp server": {"vocabulary", "model tools", "tool sources", "facade", "package", "mcp server"},
    # Optional: exec/wait as the tools of agent frameworks, beside the MCP server.
    "adapters": {"vocabulary", "model tools", "facade", "package", "adapters"},
    "cli": {
        "vocabulary",
        "session runtime",
        "model tools",
        "tool sources",
        "facade",
        "package",
        "mcp server",
        "cli",
    },
}

#: Aliases kept for code written against earlier releases: they import from a layer above,
#: lazily (inside a module ``__getattr__``), and only these may.
COMPAT_ALIASES = {
    ("code_mode.model_tools.session", "code_mode._facade"),
    ("code_mode.integrations.mcp", "code_mode.mcp_server"),
}


def layer_of(module: str) -> str:
    parts = module.split(".")
    if parts == ["code_mode"]:
        return "package"
    second = parts[1]
    if second in {
        "_types",
        "_errors",
        "_config",
        "_delegate",
        "_resumption",
        "_tool_names",
        "_validators",
    }:
        return "vocabulary"
    table = {
        "_v8": "worker half",
        "_engine": "engine",
        "_cell": "cell",
        "_session_runtime": "session runtime",
        "model_tools": "model tools",
        "integrations": "tool sources",
        "_facade": "facade",
        "_asyncio_host": "facade",
        "mcp_server": "mcp server",
        "adapters": "adapters",
        "cli": "cli",
        "__main__": "cli",
    }
    if second not in table:
        raise AssertionError(f"{module}: no layer; add it to docs/architecture.md and here")
    return table[second]


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(module: str, path: Path) -> list[tuple[str, bool]]:
    """``(imported code_mode module, lazy)`` for every import in ``path``; *lazy* when the
    import is inside a function."""
    source = path.read_text(encoding="utf-8")
    return imports_in(module, source, is_package=path.name == "__init__.py")


def imports_in(module: str, source: str, *, is_package: bool) -> list[tuple[str, bool]]:
    """Every import, ``if TYPE_CHECKING:`` ones included (a type-only import is an
    arrow of the layer table too)."""
    tree = ast.parse(source)
    package = module if is_package else module.rpartition(".")[0]
    known = modules()
    found: list[tuple[str, bool]] = []

    def visit(node: ast.AST, lazy: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = lazy or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.Import):
                found.extend((alias.name, inner) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")
                    base = base[: len(base) - (child.level - 1)]
                    target = ".".join([*base, *([child.module] if child.module else [])])
                else:
                    target = child.module or ""
                # `from package import submodule` imports the submodule (and runs the
                # package's __init__, which is at the package's layer anyway).
                submodules = [f"{target}.{alias.name}" for alias in child.names]
                if all(name in known for name in submodules):
                    found.extend((name, inner) for name in submodules)
                else:
                    found.append((target, inner))
            visit(child, inner)

    visit(tree, False)
    return [(name, lazy) for name, lazy in found if name in known]


def test_every_module_has_a_layer() -> None:
    for module in modules():
        layer_of(module)


@pytest.mark.parametrize("module", sorted(modules()))
def test_no_module_imports_from_a_layer_above_its_own(module: str) -> None:
    path = modules()[module]
    mine = layer_of(module)
    wrong = []
    for imported, lazy in imports(module, path):
        theirs = layer_of(imported)
        if theirs in LAYERS[mine]:
            continue
        if lazy and any(
            module == alias and imported.startswith(target) for alias, target in COMPAT_ALIASES
        ):
            continue
        wrong.append(f"{imported} ({theirs})")
    assert not wrong, f"{module} ({mine}) imports from above: {wrong}"


def test_the_checker_resolves_relative_lazy_and_submodule_imports() -> None:
    """The checker itself, on made-up sources: an upward import is found however it is
    written, and the layer table refuses it."""
    source = (
        "from .._facade import CodeModeSession\n"
        "from . import _warm\n"
        "def later():\n"
        "    import code_mode.mcp_server\n"
    )
    found = imports_in("code_mode._engine.engine", source, is_package=False)
    assert found == [
        ("code_mode._facade", False),
        ("code_mode._engine._warm", False),
        ("code_mode.mcp_server", True),
    ]
    assert layer_of("code_mode._facade") not in LAYERS["engine"]
    assert layer_of("code_mode.mcp_server") not in LAYERS["engine"]


def test_a_worker_process_imports_only_the_worker_half() -> None:
    """The worker's bootstrap registers a bare ``code_mode`` package, so its
    ``__init__`` (trio, attrs, the session runtime, the engine) does not run."""
    from code_mode._v8 import BOOTSTRAP

    probe = BOOTSTRAP.replace(
        "from code_mode._v8._worker_process_main import Channels, serve",
        "import code_mode._v8._worker_process_main\n"
        "names = sorted(n for n in sys.modules if n.startswith('code_mode') or n in "
        "('trio', 'attrs', 'outcome'))\n"
        "print(' '.join(names)); raise SystemExit(0)",
    )
    assert probe != BOOTSTRAP
    result = subprocess.run(
        [sys.executable, "-c", probe, str(PACKAGE), "none"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    loaded = set(result.stdout.split())
    assert not loaded & {"trio", "attrs", "outcome"}, loaded
    assert loaded - {"code_mode"}, loaded
    assert all(name == "code_mode" or name.startswith("code_mode._v8") for name in loaded), loaded


def _third_party_imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("module", sorted(m for m in modules() if layer_of(m) == "worker half"))
def test_the_worker_half_imports_neither_trio_nor_attrs(module: str) -> None:
    """Not even for types: it runs in a worker process that starts without them, and
    it is tested without trio."""
    found = _third_party_imports(modules()[module]) & {"trio", "attrs", "outcome", "code_mode"}
    assert not found, f"{module} imports {sorted(found)}"


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports (lazy and type-only ones too)."""
    return {
        module: {imported for imported, _lazy in imports(module, path) if imported != module}
        for module, path in modules().items()
    }


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_circle_finder_finds_type_only_circles() -> None:
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import _pkeys\n"
    assert imports_in("code_mode._v8._native", source, is_package=False) == [
        ("code_mode._v8._pkeys", False)
    ]
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]


def test_the_package_has_no_import_circle() -> None:
    """No module reaches itself through imports, type-only and lazy ones included
    (``from . import sibling`` is an arrow to the sibling, not to the package's
    ``__init__``): every module can be read knowing only what lies below it."""
    assert circles(import_graph()) == []
