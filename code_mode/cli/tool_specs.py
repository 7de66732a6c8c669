"""Finding the tools a ``--tools`` option names, the way uvicorn and FastMCP find apps.

Two forms:

* ``pkg.module:attribute`` -- imported as a module, from the current folder first
  (an MCP host starts the server with few environment variables and no
  ``PYTHONPATH``, so "the folder I started it in" is what a user means), then
  ``sys.path``;
* ``path/to/file.py:attribute`` -- the file itself, from any folder (relative paths
  against the current folder); its own folder goes on ``sys.path`` so that it can
  import its neighbours.

The attribute may be dotted (``module:registry.tools``) and names a list or tuple of
tools, or one tool or function.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["load_tools"]


def load_tools(spec: str) -> list[Any]:
    """The tools named by ``spec``; raises ``ValueError`` naming what was tried."""
    target, colon, attribute = spec.rpartition(":")
    if not colon or not target or not attribute:
        raise ValueError(
            f"--tools expects `pkg.module:attribute` or `path/to/file.py:attribute`, got {spec!r}"
        )
    if target.endswith(".py") or os.sep in target or "/" in target:
        module = _import_file(spec, Path(target))
    else:
        module = _import_module(spec, target)
    value: Any = module
    for part in attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            # The user's name for the module (a file's is internal to this loader).
            raise ValueError(f"--tools {spec}: {target} has no attribute `{attribute}`") from None
    tools = list(value) if isinstance(value, list | tuple) else [value]
    for item in tools:
        if not _is_tool(item):
            raise ValueError(
                f"--tools {spec}: `{attribute}` must be a tool, a function, or a list or "
                f"tuple of them; it holds {type(item).__name__} {_short(item)}"
            )
    return tools


def _is_tool(value: Any) -> bool:
    """A ``@tool`` (or any nested tool, which has a ``definition``) or a function."""
    return hasattr(value, "definition") or callable(value)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _import_module(spec: str, name: str) -> ModuleType:
    folder = os.getcwd()
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        return importlib.import_module(name)
    except ImportError as error:
        raise ValueError(
            f"--tools {spec}: cannot import {name}: {error} (looked in the current folder "
            f"{folder} and on sys.path; for a file elsewhere, pass its path: "
            f"path/to/file.py:attribute)"
        ) from None


def _import_file(spec: str, path: Path) -> ModuleType:
    file = path.expanduser().resolve()
    if file.suffix != ".py" or not file.is_file():
        raise ValueError(f"--tools {spec}: no Python file at {file}")
    folder = str(file.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    # A name of its own per file, so two files called tools.py do not collide.
    digest = hashlib.sha1(str(file).encode()).hexdigest()[:8]
    name = f"_code_mode_tools_{file.stem}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    loader_spec = importlib.util.spec_from_file_location(name, file)
    if loader_spec is None or loader_spec.loader is None:  # pragma: no cover - .py files load
        raise ValueError(f"--tools {spec}: cannot load {file}")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[name] = module
    try:
        loader_spec.loader.exec_module(module)
    except Exception as error:
        del sys.modules[name]
        raise ValueError(f"--tools {spec}: importing {file} failed: {error!r}") from None
    return module
