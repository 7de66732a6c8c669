"""The public surface: what ``code_mode`` exports, and every import the docs show."""

from __future__ import annotations

import importlib
import re
import types
from pathlib import Path

import pytest

import code_mode

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

#: Public modules and packages: each one's ``__all__`` is its whole surface.
PUBLIC_MODULES = [
    "code_mode",
    "code_mode.model_tools",
    "code_mode.integrations",
    "code_mode.integrations.mcp",
    "code_mode.mcp_server",
]


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_exported_members(name: str) -> None:
    """As httpx and trio check theirs: ``__all__`` lists exactly the public names."""
    module = importlib.import_module(name)
    exported = set(module.__all__)
    assert len(exported) == len(module.__all__), "duplicates in __all__"
    public = {
        member
        for member, value in vars(module).items()
        if not member.startswith("_")
        and not isinstance(value, types.ModuleType)
        and member not in {"annotations"}  # from __future__
    }
    assert exported == public
    for member in exported:
        value = getattr(module, member)
        origin = getattr(value, "__module__", None)
        if member == "JSON":  # a type alias (of typing.Any: JSON is recursive)
            continue
        if isinstance(value, (type, types.FunctionType)):
            assert origin is not None and origin.startswith("code_mode"), (member, origin)


def test_exported_objects_say_what_they_are() -> None:
    for member in code_mode.__all__:
        value = getattr(code_mode, member)
        if member != "JSON" and (isinstance(value, (type, types.FunctionType))):
            assert (value.__doc__ or "").strip(), f"{member} has no docstring"


def documented_imports() -> list[tuple[str, str, str]]:
    """``(doc, module, name)`` for every ``from code_mode... import ...`` in the docs."""
    found = []
    pattern = re.compile(r"^from (code_mode[\w.]*) import \(?([\w, \n]+?)\)?$", re.M)
    for doc in DOCS:
        for module, names in pattern.findall(doc.read_text(encoding="utf-8")):
            for name in re.split(r"[,\s]+", names.strip()):
                if name:
                    found.append((doc.name, module, name))
    return found


def test_the_docs_show_imports() -> None:
    assert len(documented_imports()) > 20
    modules = {module for _, module, _ in documented_imports()}
    assert "code_mode" in modules and "code_mode.mcp_server" in modules


@pytest.mark.parametrize(("doc", "module", "name"), documented_imports())
def test_every_import_the_docs_show_works(doc: str, module: str, name: str) -> None:
    assert hasattr(importlib.import_module(module), name), f"{doc}: from {module} import {name}"


def test_each_public_name_is_exported_by_one_public_module() -> None:
    """trio's rule (``test_exports.py``): a name has one home. A name exported by two
    public modules is two ways to spell one import, and one of them goes stale."""
    homes: dict[str, list[str]] = {}
    for name in PUBLIC_MODULES:
        for member in importlib.import_module(name).__all__:
            homes.setdefault(member, []).append(name)
    assert {member: where for member, where in homes.items() if len(where) > 1} == {}


@pytest.mark.parametrize(
    ("old", "name"),
    [
        ("code_mode.model_tools.session", "CodeModeSession"),
        ("code_mode.integrations.mcp", "CodeModeMcpServer"),
        ("code_mode.integrations.mcp", "DEFAULT_MAX_SESSIONS"),
        ("code_mode.model_tools.typescript", "normalize_identifier"),
    ],
)
def test_no_alias_for_an_old_import_path(old: str, name: str) -> None:
    """0.x: a name that moved is gone from its old place (the CHANGELOG says where it
    went); no module ``__getattr__`` keeps it importable."""
    try:
        module = importlib.import_module(old)
    except ImportError:
        return
    assert name not in getattr(module, "__all__", ())
    if name != "normalize_identifier":  # typescript.py uses it, from _tool_names
        assert not hasattr(module, name)


def test_no_module_getattr() -> None:
    for path in sorted((ROOT / "code_mode").rglob("*.py")):
        assert "\ndef __getattr__(" not in path.read_text(encoding="utf-8"), path


def test_is_error_result_is_importable_from_the_package() -> None:
    from code_mode import Text, is_error_result

    assert is_error_result([Text("Script failed\nWall time 0.0 seconds\nOutput:\n")])
    assert not is_error_result([Text("Script completed\nWall time 0.0 seconds\nOutput:\n")])
