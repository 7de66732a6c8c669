"""Checking a program's tool calls before it runs (``CodeModeSession(check_programs=True)``).

pydantic's monty type-checks programs against stubs before running them; this is the
part of that a JSON-Schema tool set allows. :func:`~code_mode.model_tools.program_scan.
scan_tool_calls` finds the program's ``tools.x(...)`` calls and their literal
arguments; :class:`ProgramCheck` compares them with the session's tools and returns
the error text the first failing call would have rejected with, so the ``exec``
fails at once, before any tool runs, with the text the model would have seen anyway:

* a call of a tool that is not enabled: ``tool `<name>` is not enabled in exec``;
* a function tool called with a literal that is not an object (``tools.add("x")``):
  ``tool `<name>` expects a JSON object for arguments``; a freeform tool called with
  no string: ``tool `<name>` expects a string input``;
* for a ``@tool`` function (whose input this library validates, so the text is
  known): an object literal that lacks a required field, has a field the schema does
  not allow, or (where the values are literals) a value of the wrong type, with the
  validator's text (``invalid arguments for tool `add`: field `b`: missing required
  field``).

It claims only what a run would show: a call whose rejection the program visibly
handles (inside ``try``, in ``Promise.allSettled``/``any``, ``as_settled``,
``stream_settled``, or with ``.catch``/``.then`` chained) is not checked, an entry
whose value is not a literal stops the field checks there (its value might be
``undefined``, or of the wrong type, which would fail first), and a local ``tools``
turns the check off. What it cannot see: calls through another name (``const t =
tools; t.x()``), computed names, arguments built in variables, tools other than
``@tool`` functions (an MCP server's own validation text is the server's), and
whether a call is reached at all (a call in a branch never taken still fails the
check, as a type checker would).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from .._tool_names import normalize_identifier
from .._types import ToolDefinition, ToolKind
from ..integrations._json_schema import JSONValidationError, child_path, validate_json
from ..integrations._schema import ToolArgumentsError
from ..integrations.python_tools import PythonTool
from ..integrations.routing import NestedTool
from ..model_tools.program_scan import (
    UNDEFINED,
    UNKNOWN,
    CallSite,
    NoArgument,
    ObjectLiteral,
    scan_tool_calls,
)

__all__ = ["ProgramCheck"]

#: Names the runtime's `tools` object does not turn into tools (Object.prototype's,
#: and those `await`/JSON probe), so calling them fails otherwise, or not at all.
_NOT_TOOLS: Final = frozenset(
    {
        "then",
        "toJSON",
        "constructor",
        "hasOwnProperty",
        "isPrototypeOf",
        "propertyIsEnumerable",
        "toLocaleString",
        "toString",
        "valueOf",
        "__proto__",
        "__defineGetter__",
        "__defineSetter__",
        "__lookupGetter__",
        "__lookupSetter__",
    }
)


class ProgramCheck:
    """The check for one tool set (built once per session)."""

    def __init__(self, tools: Iterable[NestedTool], enabled: Iterable[ToolDefinition]) -> None:
        by_name = {nested.definition.name: nested for nested in tools}
        self._tools: dict[str, tuple[ToolDefinition, NestedTool | None]] = {
            normalize_identifier(d.name): (d, by_name.get(d.name)) for d in enabled
        }

    def error(self, source: str) -> str | None:
        """The rejection text of the first call of ``source`` that would fail, or
        ``None`` when the check finds none."""
        scanned = scan_tool_calls(source)
        if scanned.shadowed:
            return None
        for site in scanned.calls:
            if site.handled or site.key in _NOT_TOOLS:
                continue
            problem = self._call_error(site)
            if problem is not None:
                return problem
        return None

    def _call_error(self, site: CallSite) -> str | None:
        entry = self._tools.get(site.key)
        if entry is None:
            return f"tool `{site.key}` is not enabled in exec"
        definition, nested = entry
        argument = site.argument
        if argument is UNKNOWN:
            return None
        if definition.kind is ToolKind.FREEFORM:
            if isinstance(argument, str):
                return None
            return f"tool `{site.key}` expects a string input"
        if not isinstance(argument, NoArgument | ObjectLiteral):
            return f"tool `{site.key}` expects a JSON object for arguments"
        if not isinstance(nested, PythonTool):
            return None
        schema = nested.definition.input_schema
        if isinstance(argument, NoArgument):
            return _validation_error(nested, {}, schema)
        return _object_error(nested, argument, schema)


def _validation_error(tool: PythonTool[Any, Any], value: Any, schema: Any) -> str | None:
    """The text of the tool's own check of ``value`` (its ``parse_arguments``)."""
    try:
        validate_json(value, schema)
    except JSONValidationError as error:
        return str(ToolArgumentsError(tool.definition.name, error))
    return None


def _object_error(tool: PythonTool[Any, Any], literal: ObjectLiteral, schema: Any) -> str | None:
    entries = literal.entries
    if literal.complete and all(value is not UNKNOWN for value in entries.values()):
        value = {key: item for key, item in entries.items() if item is not UNDEFINED}
        return _validation_error(tool, value, schema)
    if not literal.complete or not _plain_object_schema(schema):
        return None
    # As the validator goes, as far as the literals take it: required fields first,
    # then each field in order (an unknown value stops it: it might fail first).
    name = tool.definition.name
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = schema.get("required")
    for field in required if isinstance(required, list) else []:
        if isinstance(field, str) and entries.get(field, UNDEFINED) is UNDEFINED:
            error = JSONValidationError(child_path("", field), "missing required field")
            return str(ToolArgumentsError(name, error))
    additional = schema.get("additionalProperties", True)
    for key, item in entries.items():
        if item is UNDEFINED:
            continue
        if item is UNKNOWN:
            return None
        if key not in properties and additional is False:
            allowed = ", ".join(sorted(properties)) or "none"
            error = JSONValidationError(
                child_path("", key), f"unexpected field (allowed fields: {allowed})"
            )
            return str(ToolArgumentsError(name, error))
        try:
            validate_json(item, properties.get(key, additional), path=child_path("", key))
        except JSONValidationError as error:
            return str(ToolArgumentsError(name, error))
    return None


def _plain_object_schema(schema: Any) -> bool:
    """A schema whose only checks of an object are its fields' (no ``anyOf`` and the
    like at the top, whose errors come first and differ)."""
    if not isinstance(schema, dict):
        return False
    if any(keyword in schema for keyword in ("const", "enum", "anyOf", "oneOf", "allOf")):
        return False
    kind = schema.get("type", "object")
    return kind == "object" or (isinstance(kind, list) and "object" in kind)
