"""Python functions as nested tools: ``@tool`` turns a type-hinted function into a tool
a program calls as ``await tools.<name>({...})``.

::

    @tool
    async def search(
        query: Annotated[str, "What to look for."],
        limit: int = 10,
    ) -> list[str]:
        \"\"\"Search the documentation.\"\"\"
        ...

    search.definition   # ToolDefinition: kind FUNCTION, input and output JSON Schemas
    await search.call({"query": "trio", "limit": 3})   # validated, converted, run

What the decorator does:

* **Input schema** from the parameters' type hints: one object property per parameter;
  parameters with a default are optional (and the default is shown when it is JSON);
  ``Annotated[T, "text"]`` (or metadata with a ``description`` or ``documentation``
  attribute) describes a parameter; the docstring describes the tool. Supported hints:
  ``str``, ``int``, ``float``, ``bool``, ``None``, ``Any``/``object`` (anything),
  ``list[T]``/``Sequence[T]``, ``tuple[T, ...]``/``tuple[A, B]``,
  ``dict[str, T]``/``Mapping[str, T]``, ``Literal[...]``, ``enum.Enum`` subclasses,
  ``Optional``/``X | Y`` unions, ``TypedDict`` (``Required``/``NotRequired`` honoured),
  ``attrs`` classes, dataclasses and pydantic models (fields with defaults optional;
  a model's fields by their aliases, ``Field(description=...)`` honoured), ``NewType``
  and ``Annotated`` around any of these. Bounds, lengths and patterns in ``Annotated``
  metadata (annotated-types' ``Gt``/``Ge``/``Lt``/``Le``/``MinLen``/``MaxLen``,
  pydantic's ``Field(...)``) become schema keywords. Anything else is a ``TypeError``
  at decoration time, naming the parameter. pydantic is optional (see ``_pydantic``).
* **Output schema** from the return hint when it is one of the above (attrs/dataclass
  fields are then all required: the returned object always has them). A missing,
  ``Any`` or unsupported return hint gives no output schema (the model sees
  ``unknown``); the value is still converted and checked at run time.
* **Validation**: the input is checked against the generated schema before the
  function runs, by :func:`validate_json` (a small validator for the JSON Schema
  subset the generator emits, so no dependency). A bad input raises
  :class:`ToolArgumentsError`, whose message becomes the program's rejection, e.g.
  ``invalid arguments for tool `search`: field `limit`: expected integer, got string``.
  Valid input is then decoded into the hinted types (JSON objects into attrs classes,
  dataclasses and enums; lists into tuples; integers into floats where a float is
  expected; integral numbers such as ``3.0`` into ``int``). A pydantic model is built
  by its own validation; what its validators refuse is a :class:`ToolArgumentsError`
  too, naming the field.
* **Return value**: converted to JSON data by :func:`to_json` (attrs instances and
  dataclasses -> objects, pydantic models -> their dump by alias, tuples -> arrays,
  enums -> their values); anything else that
  is not JSON raises :class:`ToolResultError` naming where it is.
* **Sync functions** run in a worker thread (``trio.to_thread.run_sync``), never on
  the trio thread. The thread is not abandoned when the call is cancelled: a running
  sync tool finishes first (the session's ``async with`` waits for it), so write long
  sync tools to return promptly or make them async.
* **Namespaces**: ``@tool(namespace="github")`` gives ``ToolName("search", "github")``
  and the flattened raw name ``github__search``, i.e. ``tools.github__search`` in a
  program (namespaced tools are flat on ``tools``, like ``mcp__server__tool``).
"""

from __future__ import annotations

import collections.abc
import contextlib
import dataclasses
import enum
import functools
import inspect
import json
import math
import re
import types
import typing
from collections.abc import Callable
from typing import Any, Final, Generic, Literal, ParamSpec, TypeVar, overload

import attrs
import trio

from code_mode import JSON, ToolDefinition, ToolKind, ToolName

from ._pydantic import (
    ModelInputError,
    dump_model,
    field_info_metadata,
    is_model,
    is_model_class,
    model_fields,
    validate_model,
)

__all__ = [
    "JSONValidationError",
    "PythonTool",
    "ToolArgumentsError",
    "ToolResultError",
    "input_schema_for",
    "schema_for_type",
    "to_json",
    "tool",
    "validate_json",
]

NAMESPACE_SEPARATOR: Final = "__"
"""Joins a namespace and a tool name into the raw name: ``github`` + ``search`` ->
``github__search``."""

_MAX_DEPTH: Final = 256
"""Nesting at which :func:`to_json` and :func:`validate_json` give up (cycles, hostile
input); the runtime's own ``max_json_depth`` is lower anyway."""


# --- errors ---------------------------------------------------------------------------


class JSONValidationError(ValueError):
    """A JSON value does not match a schema. ``path`` is where (``""`` for the value
    itself, else e.g. ``filters.tags[2]``); ``problem`` is what is wrong.
    ``str(error)`` is ``field `<path>`: <problem>``, or just the problem at the root."""

    def __init__(self, path: str, problem: str, *, mismatch: bool = False) -> None:
        self.path = path
        self.problem = problem
        self.mismatch = mismatch  # the value's kind itself was wrong (type/enum/const)
        super().__init__(f"field `{path}`: {problem}" if path else problem)


class ToolArgumentsError(ValueError):
    """The input of a tool call does not match the tool's input schema. The message
    names the tool and the field, and is what the program's promise rejects with."""

    def __init__(self, tool: str, error: JSONValidationError) -> None:
        self.tool = tool
        self.error = error
        super().__init__(f"invalid arguments for tool `{tool}`: {error}")


class ToolResultError(TypeError):
    """A tool returned a value that cannot be converted to JSON data."""


# --- JSON Schema validation -------------------------------------------------------------

_IDENTIFIER: Final = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")


def _child_path(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if _IDENTIFIER.match(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key)}]"


def json_type(value: object) -> str:
    """The JSON type name of ``value``: ``null``, ``boolean``, ``integer``, ``number``,
    ``string``, ``array``, ``object``, or the Python type name for non-JSON values."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _is_type(value: object, name: str) -> bool:
    if name == "integer":
        # JavaScript has one number type: 3.0 is as much an integer as 3.
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and math.isfinite(value) and value.is_integer()
        )
    if name == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return json_type(value) == name


def _literal(value: JSON) -> str:
    return json.dumps(value, ensure_ascii=False)


def _summary(schema: JSON) -> str:
    """A few words for what a schema accepts, for "expected ..., got ..." messages."""
    if not isinstance(schema, dict):
        return "any value" if schema is not False else "nothing"
    if "const" in schema:
        return _literal(schema["const"])
    if isinstance(schema.get("enum"), list):
        return "one of " + ", ".join(_literal(value) for value in schema["enum"])
    variants = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(variants, list) and variants:
        return " or ".join(_summary(variant) for variant in variants)
    kind = schema.get("type")
    if isinstance(kind, str):
        return kind
    if isinstance(kind, list) and kind:
        return " or ".join(str(name) for name in kind)
    return "a matching value"


def validate_json(value: JSON, schema: JSON, *, path: str = "") -> None:
    """Check ``value`` against ``schema``; raise :class:`JSONValidationError` at the
    first problem.

    Supports the subset of JSON Schema that :func:`schema_for_type` generates and that
    hand-written tool schemas commonly use: ``type`` (a name or a list),
    ``enum``, ``const``, ``anyOf``/``oneOf`` (both as "at least one matches"),
    ``allOf``, ``properties``, ``required``, ``additionalProperties`` (boolean or
    schema), ``items``, ``prefixItems``, ``minItems``/``maxItems``,
    ``minimum``/``maximum`` (and the exclusive forms), ``minLength``/``maxLength`` and
    ``pattern``. Other keywords (``description``, ``default``, ``format``, ``$ref``,
    ...) are not checked. ``true``/``{}`` accept anything, ``false`` nothing.
    """
    _validate(value, schema, path, 0)


def _validate(value: JSON, schema: JSON, path: str, depth: int) -> None:
    if depth > _MAX_DEPTH:
        raise JSONValidationError(path, "value is nested too deeply")
    if schema is False:
        raise JSONValidationError(path, "no value is allowed here", mismatch=True)
    if not isinstance(schema, dict):
        return
    got = json_type(value)
    if "const" in schema and not _json_equal(value, schema["const"]):
        raise JSONValidationError(
            path, f"expected {_literal(schema['const'])}, got {_describe(value)}", mismatch=True
        )
    enum_values = schema.get("enum")
    if isinstance(enum_values, list) and not any(_json_equal(value, v) for v in enum_values):
        raise JSONValidationError(
            path, f"expected {_summary(schema)}, got {_describe(value)}", mismatch=True
        )
    kind = schema.get("type")
    if isinstance(kind, str | list):
        names = [kind] if isinstance(kind, str) else [str(name) for name in kind]
        if not any(_is_type(value, name) for name in names):
            raise JSONValidationError(
                path, f"expected {' or '.join(names)}, got {got}", mismatch=True
            )
    for keyword in ("anyOf", "oneOf"):
        variants = schema.get(keyword)
        if isinstance(variants, list) and variants:
            _validate_any_of(value, variants, schema, path, depth)
    all_of = schema.get("allOf")
    if isinstance(all_of, list):
        for variant in all_of:
            _validate(value, variant, path, depth + 1)
    if isinstance(value, dict):
        _validate_object(value, schema, path, depth)
    elif isinstance(value, list | tuple):
        _validate_array(list(value), schema, path, depth)
    elif isinstance(value, str):
        _validate_string(value, schema, path)
    elif _is_type(value, "number"):
        _validate_number(value, schema, path)


def _validate_any_of(
    value: JSON, variants: list[JSON], schema: dict[str, Any], path: str, depth: int
) -> None:
    errors: list[JSONValidationError] = []
    for variant in variants:
        try:
            _validate(value, variant, path, depth + 1)
        except JSONValidationError as error:
            errors.append(error)
        else:
            return
    # Report the problem inside the one variant the value's kind fits, if only one
    # does (an object missing a field, not "expected string or object").
    fitting = [error for error in errors if not (error.mismatch and error.path == path)]
    if len(fitting) == 1:
        raise fitting[0]
    raise JSONValidationError(
        path,
        f"expected {' or '.join(_summary(v) for v in variants)}, got {json_type(value)}",
        mismatch=True,
    )


def _validate_object(value: dict[str, Any], schema: dict[str, Any], path: str, depth: int) -> None:
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = schema.get("required")
    for name in required if isinstance(required, list) else []:
        if isinstance(name, str) and name not in value:
            raise JSONValidationError(_child_path(path, name), "missing required field")
    additional = schema.get("additionalProperties", True)
    for key, item in value.items():
        child = _child_path(path, key)
        if key in properties:
            _validate(item, properties[key], child, depth + 1)
        elif additional is False:
            allowed = ", ".join(sorted(properties)) or "none"
            raise JSONValidationError(child, f"unexpected field (allowed fields: {allowed})")
        else:
            _validate(item, additional, child, depth + 1)


def _validate_array(value: list[Any], schema: dict[str, Any], path: str, depth: int) -> None:
    min_items, max_items = schema.get("minItems"), schema.get("maxItems")
    if isinstance(min_items, int) and len(value) < min_items:
        raise JSONValidationError(
            path, f"expected at least {min_items} items, got {len(value)}", mismatch=True
        )
    if isinstance(max_items, int) and len(value) > max_items:
        raise JSONValidationError(
            path, f"expected at most {max_items} items, got {len(value)}", mismatch=True
        )
    prefix = schema.get("prefixItems")
    prefix = prefix if isinstance(prefix, list) else []
    for index, item in enumerate(value):
        child = _child_path(path, index)
        if index < len(prefix):
            _validate(item, prefix[index], child, depth + 1)
        elif "items" in schema:
            if schema["items"] is False:
                raise JSONValidationError(
                    path, f"expected at most {len(prefix)} items, got {len(value)}"
                )
            _validate(item, schema["items"], child, depth + 1)


def _validate_string(value: str, schema: dict[str, Any], path: str) -> None:
    min_length, max_length = schema.get("minLength"), schema.get("maxLength")
    if isinstance(min_length, int) and len(value) < min_length:
        raise JSONValidationError(path, f"expected at least {min_length} characters")
    if isinstance(max_length, int) and len(value) > max_length:
        raise JSONValidationError(path, f"expected at most {max_length} characters")
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and re.search(pattern, value) is None:
        raise JSONValidationError(path, f"expected a string matching {_literal(pattern)}")


def _validate_number(value: float, schema: dict[str, Any], path: str) -> None:
    bounds: list[tuple[str, Callable[[float, float], bool], str]] = [
        ("minimum", lambda v, b: v >= b, ">="),
        ("maximum", lambda v, b: v <= b, "<="),
        ("exclusiveMinimum", lambda v, b: v > b, ">"),
        ("exclusiveMaximum", lambda v, b: v < b, "<"),
    ]
    for keyword, holds, symbol in bounds:
        bound = schema.get(keyword)
        if isinstance(bound, int | float) and not isinstance(bound, bool):
            if holds(value, bound):
                continue
            raise JSONValidationError(path, f"expected a number {symbol} {bound}, got {value}")


def _describe(value: JSON) -> str:
    """A value in an error message: a short literal for scalars, else its type."""
    if isinstance(value, str | int | float | bool) or value is None:
        text = _literal(value)
        return text if len(text) <= 40 else json_type(value)
    return json_type(value)


def _json_equal(left: JSON, right: JSON) -> bool:
    """JSON equality: ``true`` is not ``1``, ``1`` is ``1.0``."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(_json_equal, left, right))
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_json_equal(left[k], right[k]) for k in left)
    if _is_type(left, "number") and _is_type(right, "number"):
        return bool(left == right)
    return type(left) is type(right) and bool(left == right)


# --- return values -> JSON ------------------------------------------------------------


def to_json(value: object) -> JSON:
    """Convert a tool's return value to JSON data.

    ``None``, booleans, integers, finite floats and strings stay; lists and tuples
    become arrays; dicts with string (or integer, which are stringified) keys become
    objects; attrs instances and dataclasses become objects of their fields (by
    ``__init__`` argument name); enum members become their values; pydantic models
    are dumped in JSON mode by alias (the names their output schema shows), other
    objects with a pydantic-style ``model_dump`` in JSON mode. Anything else, NaN and
    infinities, non-string keys and reference cycles raise :class:`ToolResultError`
    saying where (e.g. ``at `items[0].when`: unsupported type datetime``).
    """
    return _to_json(value, "", 0, set())


def _to_json(value: object, path: str, depth: int, active: set[int]) -> JSON:
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, enum.Enum):
        return _to_json(value.value, path, depth + 1, active)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _result_error(path, f"{value} is not a JSON number")
        return float(value)
    if depth > _MAX_DEPTH:
        raise _result_error(path, "value is nested too deeply")
    if id(value) in active:
        raise _result_error(path, "value contains a reference cycle")
    active.add(id(value))
    try:
        return _container_to_json(value, path, depth, active)
    finally:
        active.discard(id(value))


def _container_to_json(value: object, path: str, depth: int, active: set[int]) -> JSON:
    if isinstance(value, list | tuple):
        return [
            _to_json(item, _child_path(path, index), depth + 1, active)
            for index, item in enumerate(value)
        ]
    if isinstance(value, dict):
        result: dict[str, JSON] = {}
        for key, item in value.items():
            if isinstance(key, int) and not isinstance(key, bool):
                key = str(key)
            if not isinstance(key, str):
                raise _result_error(path, f"object key {key!r} is not a string")
            result[key] = _to_json(item, _child_path(path, key), depth + 1, active)
        return result
    cls = type(value)
    if attrs.has(cls):
        fields = {
            field.alias or field.name: getattr(value, field.name) for field in attrs.fields(cls)
        }
        return _container_to_json(fields, path, depth, active)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}
        return _container_to_json(fields, path, depth, active)
    if is_model(value):
        return _to_json(dump_model(value), path, depth + 1, active)
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        return _to_json(dump(mode="json"), path, depth + 1, active)
    kind = type(value)
    name = (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )
    raise _result_error(path, f"unsupported type {name}")


def _result_error(path: str, problem: str) -> ToolResultError:
    return ToolResultError(f"at `{path}`: {problem}" if path else problem)


# --- type hints -> schema + decoder ---------------------------------------------------


class _Node:
    """A compiled type hint: its JSON Schema and how to turn valid JSON into the
    Python value the function expects."""

    schema: dict[str, Any]

    def decode(self, value: JSON, path: str) -> Any:
        """The Python value for ``value`` (valid against ``schema``), found at ``path``
        of the input; a :class:`JSONValidationError` there when the type's own checks
        (a pydantic model's validators) refuse it."""
        return value


class _AnyNode(_Node):
    def __init__(self) -> None:
        self.schema = {}


class _ScalarNode(_Node):
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.schema = {"type": kind}

    def decode(self, value: JSON, path: str) -> Any:
        if self.kind == "integer" and isinstance(value, float):
            return int(value)
        if self.kind == "number" and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        return value


class _LiteralNode(_Node):
    def __init__(self, values: list[Any], schema: dict[str, Any]) -> None:
        self.values = values
        self.schema = schema


class _EnumNode(_Node):
    def __init__(self, cls: type[enum.Enum]) -> None:
        self.cls = cls
        self.schema = _enum_schema([member.value for member in cls])

    def decode(self, value: JSON, path: str) -> Any:
        for member in self.cls:
            if _json_equal(member.value, value):
                return member
        return self.cls(value)  # pragma: no cover - validation admits only members


class _ArrayNode(_Node):
    def __init__(self, item: _Node | None, as_tuple: bool) -> None:
        self.item = item
        self.as_tuple = as_tuple
        self.schema = {"type": "array"}
        if item is not None:
            self.schema["items"] = item.schema

    def decode(self, value: JSON, path: str) -> Any:
        items = (
            [self.item.decode(v, _child_path(path, i)) for i, v in enumerate(value)]
            if self.item
            else list(value)
        )
        return tuple(items) if self.as_tuple else items


class _TupleNode(_Node):
    def __init__(self, items: list[_Node]) -> None:
        self.items = items
        self.schema = {
            "type": "array",
            "prefixItems": [item.schema for item in items],
            "minItems": len(items),
            "maxItems": len(items),
        }

    def decode(self, value: JSON, path: str) -> Any:
        return tuple(
            node.decode(v, _child_path(path, i))
            for i, (node, v) in enumerate(zip(self.items, value, strict=True))
        )


class _MapNode(_Node):
    def __init__(self, value_node: _Node | None) -> None:
        self.value_node = value_node
        self.schema = {"type": "object"}
        if value_node is not None:
            self.schema["additionalProperties"] = value_node.schema

    def decode(self, value: JSON, path: str) -> Any:
        if self.value_node is None:
            return dict(value)
        return {
            key: self.value_node.decode(item, _child_path(path, key)) for key, item in value.items()
        }


class _UnionNode(_Node):
    def __init__(self, variants: list[_Node]) -> None:
        self.variants = variants
        self.schema = {"anyOf": [variant.schema for variant in variants]}

    def decode(self, value: JSON, path: str) -> Any:
        for variant in self.variants:
            try:
                validate_json(value, variant.schema)
            except JSONValidationError:
                continue
            return variant.decode(value, path)
        return value  # pragma: no cover - validation admits only matching values


class _DescribedNode(_Node):
    """``Annotated[T, "description", constraints...]``: T's schema plus a
    ``description`` and/or constraint keywords (``schema`` is the whole result)."""

    def __init__(self, inner: _Node, schema: dict[str, Any]) -> None:
        self.inner = inner
        self.schema = schema

    def decode(self, value: JSON, path: str) -> Any:
        return self.inner.decode(value, path)


def _described(node: _Node, description: str) -> _DescribedNode:
    return _DescribedNode(node, {**node.schema, "description": description})


@attrs.frozen
class _Field:
    name: str  # the JSON property name
    node: _Node
    required: bool
    default: Any = None
    has_default: bool = False


class _ObjectNode(_Node):
    """A JSON object with known properties (TypedDict, attrs, dataclass, parameters);
    ``build`` makes the Python value from the decoded properties."""

    def __init__(self, fields: list[_Field], build: Callable[[dict[str, Any]], Any]) -> None:
        self.fields = fields
        self.build = build
        self.schema = _object_schema(fields)

    def decode(self, value: JSON, path: str) -> Any:
        decoded = {
            field.name: field.node.decode(value[field.name], _child_path(path, field.name))
            for field in self.fields
            if field.name in value
        }
        return self.build(decoded)


class _ModelNode(_ObjectNode):
    """A pydantic model: the schema of its fields; decoding is the model's own
    validation, whose first complaint (a validator the schema cannot express) is
    reported at its place in the input."""

    def __init__(self, cls: type, fields: list[_Field]) -> None:
        super().__init__(fields, functools.partial(validate_model, cls))
        self.cls = cls

    def decode(self, value: JSON, path: str) -> Any:
        try:
            return validate_model(self.cls, value)
        except ModelInputError as error:
            for part in error.location:
                path = _child_path(path, part)
            raise JSONValidationError(path, error.message) from None


def _object_schema(fields: list[_Field]) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for field in fields:
        schema = dict(field.node.schema)
        if field.has_default:
            with contextlib.suppress(ToolResultError):
                schema["default"] = to_json(field.default)
        properties[field.name] = schema
    result: dict[str, Any] = {"type": "object", "properties": properties}
    required = [field.name for field in fields if field.required]
    if required:
        result["required"] = required
    result["additionalProperties"] = False
    return result


def _enum_schema(values: list[Any]) -> dict[str, Any]:
    kinds = {json_type(value) for value in values}
    schema: dict[str, Any] = {}
    if len(kinds) == 1:
        schema["type"] = kinds.pop()
    schema["enum"] = values
    return schema


def _expanded_metadata(metadata: tuple[Any, ...]) -> tuple[Any, ...]:
    """``Annotated`` metadata with the constraints of a pydantic ``Field(...)`` after it."""
    items: list[Any] = []
    for item in metadata:
        items.append(item)
        items.extend(field_info_metadata(item) or ())
    return tuple(items)


_BOUNDS: Final = {
    "gt": "exclusiveMinimum",
    "ge": "minimum",
    "lt": "exclusiveMaximum",
    "le": "maximum",
}
_CONSTRAINTS: Final = (*_BOUNDS, "min_length", "max_length", "pattern")


def _constraints(metadata: tuple[Any, ...]) -> dict[str, Any]:
    """Constraints in ``Annotated`` metadata, read by attribute name so that neither
    ``annotated_types`` (``Gt``, ``Ge``, ``Lt``, ``Le``, ``Interval``, ``MinLen``,
    ``MaxLen``, ``Len``, what pydantic's ``Field`` stores) nor pydantic (``pattern``)
    is needed."""
    found: dict[str, Any] = {}
    for item in metadata:
        if isinstance(item, str) or field_info_metadata(item) is not None:
            continue
        for attribute in _CONSTRAINTS:
            value = getattr(item, attribute, None)
            if value is not None:
                found[attribute] = value
    return found


def _constrained(schema: dict[str, Any], constraints: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with the JSON Schema keywords for ``constraints`` where they apply:
    bounds on numbers, lengths on strings and arrays, a pattern on strings; through
    ``anyOf`` into the variants they fit (``Field(pattern=...)`` on ``str | None``)."""
    if not constraints:
        return schema
    variants = schema.get("anyOf")
    if isinstance(variants, list):
        return {**schema, "anyOf": [_constrained(variant, constraints) for variant in variants]}
    kind = schema.get("type")
    extra: dict[str, Any] = {}
    for attribute, value in constraints.items():
        if attribute in _BOUNDS and kind in ("integer", "number"):
            if isinstance(value, int | float) and not isinstance(value, bool):
                extra[_BOUNDS[attribute]] = value
        elif attribute in ("min_length", "max_length") and kind in ("string", "array"):
            if isinstance(value, int) and not isinstance(value, bool):
                bound = "min" if attribute == "min_length" else "max"
                extra[bound + ("Length" if kind == "string" else "Items")] = value
        elif attribute == "pattern" and kind == "string" and isinstance(value, str):
            extra["pattern"] = value
    return {**schema, **extra}


def _description_of(metadata: tuple[Any, ...]) -> str | None:
    for item in metadata:
        if isinstance(item, str):
            return item
        for attribute in ("description", "documentation"):
            text = getattr(item, attribute, None)
            if isinstance(text, str):
                return text
    return None


_NONE_TYPES: Final = (None, type(None))
_TYPED_DICT_QUALIFIERS: Final = tuple(
    getattr(typing, name)
    for name in ("Required", "NotRequired", "ReadOnly")
    if hasattr(typing, name)
)
_TYPE_ALIAS_TYPES: Final[tuple[type, ...]] = tuple(
    getattr(typing, name) for name in ("TypeAliasType",) if hasattr(typing, name)
)


class _Compiler:
    """Compiles type hints into :class:`_Node` trees. ``output`` marks a return hint:
    attrs/dataclass fields are then all required (the returned object has them all)."""

    def __init__(self, *, output: bool) -> None:
        self.output = output
        self.active: list[type] = []

    def compile(self, hint: Any) -> _Node:
        origin = typing.get_origin(hint)
        args = typing.get_args(hint)
        if origin is typing.Annotated:
            inner = self.compile(args[0])
            metadata = _expanded_metadata(args[1:])
            schema = _constrained(inner.schema, _constraints(metadata))
            description = _description_of(metadata)
            if description:
                schema = {**schema, "description": description}
            return _DescribedNode(inner, schema) if schema != inner.schema else inner
        if origin in _TYPED_DICT_QUALIFIERS:
            return self.compile(args[0])
        if hint is Any or hint is object:
            return _AnyNode()
        if hint in _NONE_TYPES:
            return _ScalarNode("null")
        if isinstance(hint, typing.NewType):
            return self.compile(hint.__supertype__)
        if _TYPE_ALIAS_TYPES and isinstance(hint, _TYPE_ALIAS_TYPES):
            return self.compile(getattr(hint, "__value__", Any))  # pragma: no cover - 3.12+
        scalar = {bool: "boolean", int: "integer", float: "number", str: "string"}.get(hint)
        if scalar is not None:
            return _ScalarNode(scalar)
        if origin is Literal:
            return self._literal(list(args))
        if origin in (typing.Union, types.UnionType):
            return self._union(list(args))
        if origin in (list, collections.abc.Sequence, collections.abc.MutableSequence) or hint in (
            list,
            collections.abc.Sequence,
        ):
            return _ArrayNode(self.compile(args[0]) if args else None, as_tuple=False)
        if origin is tuple or hint is tuple:
            if not args or (len(args) == 2 and args[1] is Ellipsis):
                return _ArrayNode(self.compile(args[0]) if args else None, as_tuple=True)
            return _TupleNode([self.compile(arg) for arg in args])
        if origin in (dict, collections.abc.Mapping, collections.abc.MutableMapping) or hint in (
            dict,
            collections.abc.Mapping,
        ):
            if args and args[0] is not str:
                raise TypeError(f"dict keys must be `str` (JSON object keys), got {args[0]!r}")
            return _MapNode(self.compile(args[1]) if args else None)
        if isinstance(hint, type):
            return self._class(hint)
        raise TypeError(f"unsupported type hint {hint!r}")

    def _literal(self, values: list[Any]) -> _Node:
        for value in values:
            if value is not None and not isinstance(value, str | int | bool):
                raise TypeError(f"unsupported Literal value {value!r}")
        if len(values) == 1:
            value = values[0]
            schema: dict[str, Any] = {"type": json_type(value), "const": value}
            return _LiteralNode(values, schema)
        return _LiteralNode(values, _enum_schema(values))

    def _union(self, args: list[Any]) -> _Node:
        variants = [self.compile(arg) for arg in args]
        # Optional[Literal[...]] and friends read better flat; keep it simple otherwise.
        return _UnionNode(variants)

    def _class(self, cls: type) -> _Node:
        if issubclass(cls, enum.Enum):
            return _EnumNode(cls)
        if cls in self.active:
            raise TypeError(f"recursive type {cls.__qualname__} is not supported")
        self.active.append(cls)
        try:
            if typing.is_typeddict(cls):
                return self._typed_dict(cls)
            if attrs.has(cls):
                return self._attrs(cls)
            if dataclasses.is_dataclass(cls):
                return self._dataclass(cls)
            if is_model_class(cls):
                return self._model(cls)
        finally:
            self.active.pop()
        raise TypeError(
            f"unsupported type {cls.__qualname__} (use a TypedDict, an attrs class, a "
            "dataclass, a pydantic model, or JSON types)"
        )

    def _hints(self, owner: Any) -> dict[str, Any]:
        try:
            return typing.get_type_hints(owner, include_extras=True)
        except NameError as error:
            raise TypeError(f"cannot resolve the type hints of {owner!r}: {error}") from None

    def _typed_dict(self, cls: type) -> _Node:
        hints = self._hints(cls)
        required_keys: frozenset[str] = getattr(cls, "__required_keys__", frozenset(hints))
        fields: list[_Field] = []
        for name, hint in hints.items():
            # An explicit Required/NotRequired wins: with `from __future__ import
            # annotations`, Python 3.11 cannot see it when computing __required_keys__.
            required = name in required_keys
            qualifier = typing.get_origin(hint)
            if qualifier is typing.Required:
                required = True
            elif qualifier is typing.NotRequired:
                required = False
            fields.append(_Field(name, self._field_node(name, hint, cls), required=required))
        return _ObjectNode(fields, dict)

    def _attrs(self, cls: type) -> _Node:
        hints = self._hints(cls)
        fields: list[_Field] = []
        for field in attrs.fields(cls):
            if not field.init and not self.output:
                continue
            hint = hints.get(field.name, field.type)
            if hint is None:
                raise TypeError(f"field `{field.name}` of {cls.__qualname__} has no type hint")
            node = self._field_node(field.name, hint, cls)
            description = field.metadata.get("description")
            if isinstance(description, str) and "description" not in node.schema:
                node = _described(node, description)
            has_default = field.default is not attrs.NOTHING
            # A factory default (`attrs.Factory(list)`) makes the field optional, but
            # has no value to show in the schema.
            shown = has_default and not isinstance(field.default, attrs.Factory)  # type: ignore[arg-type]
            fields.append(
                _Field(
                    field.alias or field.name,
                    node,
                    required=self.output or not has_default,
                    default=field.default if shown else None,
                    has_default=shown and not self.output,
                )
            )
        return _ObjectNode(fields, lambda kwargs: cls(**kwargs))

    def _dataclass(self, cls: type) -> _Node:
        hints = self._hints(cls)
        fields: list[_Field] = []
        for field in dataclasses.fields(cls):
            if not field.init and not self.output:
                continue
            node = self._field_node(field.name, hints.get(field.name, field.type), cls)
            description = field.metadata.get("description")
            if isinstance(description, str) and "description" not in node.schema:
                node = _described(node, description)
            has_value_default = field.default is not dataclasses.MISSING
            has_default = has_value_default or field.default_factory is not dataclasses.MISSING
            fields.append(
                _Field(
                    field.name,
                    node,
                    required=self.output or not has_default,
                    default=field.default if has_value_default else None,
                    has_default=has_value_default and not self.output,
                )
            )
        return _ObjectNode(fields, lambda kwargs: cls(**kwargs))

    def _model(self, cls: type) -> _Node:
        fields: list[_Field] = []
        for field in model_fields(cls):
            # Input by the name pydantic validates, output by the name it dumps.
            name = field.output_name if self.output else field.input_name
            node = self._field_node(name, field.hint, cls)
            if field.description is not None and "description" not in node.schema:
                node = _described(node, field.description)
            fields.append(
                _Field(
                    name,
                    node,
                    required=self.output or field.required,
                    default=field.default,
                    has_default=field.has_value_default and not self.output,
                )
            )
        return _ModelNode(cls, fields)

    def _field_node(self, name: str, hint: Any, owner: type) -> _Node:
        try:
            return self.compile(hint)
        except TypeError as error:
            raise TypeError(f"field `{name}` of {owner.__qualname__}: {error}") from None


def schema_for_type(hint: Any, *, output: bool = False) -> dict[str, Any]:
    """The JSON Schema of a type hint, as :func:`tool` generates it (``TypeError`` for
    an unsupported hint). ``output=True`` treats it as a return type."""
    return _Compiler(output=output).compile(hint).schema


@attrs.frozen
class _Signature:
    node: _ObjectNode
    positional: tuple[str, ...]  # positional-only parameter names, in order
    output_schema: dict[str, Any] | None
    output_hint_is_none: bool


def _signature(function: Callable[..., Any], tool_name: str) -> _Signature:
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError) as error:
        raise TypeError(f"tool `{tool_name}`: cannot read the signature: {error}") from None
    try:
        hints = typing.get_type_hints(function, include_extras=True)
    except NameError as error:
        raise TypeError(f"tool `{tool_name}`: cannot resolve a type hint: {error}") from None
    compiler = _Compiler(output=False)
    fields: list[_Field] = []
    positional: list[str] = []
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(
                f"tool `{tool_name}`: parameter `{parameter.name}`: *args and **kwargs "
                "are not supported (a tool takes named arguments)"
            )
        if parameter.name not in hints:
            raise TypeError(f"tool `{tool_name}`: parameter `{parameter.name}` needs a type hint")
        try:
            node = compiler.compile(hints[parameter.name])
        except TypeError as error:
            raise TypeError(f"tool `{tool_name}`: parameter `{parameter.name}`: {error}") from None
        has_default = parameter.default is not inspect.Parameter.empty
        fields.append(
            _Field(
                parameter.name,
                node,
                required=not has_default,
                default=parameter.default if has_default else None,
                has_default=has_default,
            )
        )
        if parameter.kind is parameter.POSITIONAL_ONLY:
            positional.append(parameter.name)
    output_schema: dict[str, Any] | None = None
    return_hint = hints.get("return", Any)
    if return_hint is not Any:
        try:
            output_schema = _Compiler(output=True).compile(return_hint).schema
        except TypeError:
            output_schema = None  # an unsupported return hint: the model sees `unknown`
    node = _ObjectNode(fields, dict)
    return _Signature(node, tuple(positional), output_schema, return_hint in _NONE_TYPES)


def input_schema_for(function: Callable[..., Any]) -> dict[str, Any]:
    """The input JSON Schema :func:`tool` would generate for ``function``."""
    return _signature(function, getattr(function, "__name__", "tool")).node.schema


# --- the tool -------------------------------------------------------------------------


def _is_async(function: Callable[..., Any]) -> bool:
    target: Any = function
    while isinstance(target, functools.partial):
        target = target.func
    target = inspect.unwrap(target)
    if inspect.iscoroutinefunction(target):
        return True
    # An instance whose class defines `async def __call__`.
    if inspect.isfunction(target) or inspect.ismethod(target) or isinstance(target, type):
        return False
    return inspect.iscoroutinefunction(type(target).__call__)


_P = ParamSpec("_P")
_R = TypeVar("_R")


@attrs.frozen(eq=False)
class PythonTool(Generic[_P, _R]):
    """A Python function exposed as a nested tool; made by :func:`tool`.

    ``definition`` is what a session passes to programs (and to the ``exec``
    description); :meth:`call` runs one call from a program. Calling the object itself
    calls the wrapped function unchanged, so decorated functions stay usable and
    testable from Python. The class is generic in the function's parameters and return
    type, so a type checker sees the decorated function's own signature: awaiting a
    decorated ``async def add(a: int, b: int) -> int`` gives an ``int``.
    """

    function: Callable[_P, _R]
    definition: ToolDefinition
    is_async: bool
    _signature: _Signature = attrs.field(alias="signature", repr=False)

    @property
    def tool_name(self) -> ToolName:
        """The host's name of the tool (``name``, ``namespace``)."""
        return self.definition.tool_name

    def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        return self.function(*args, **kwargs)

    def parse_arguments(self, input: JSON) -> tuple[list[Any], dict[str, Any]]:
        """Validate a call's JSON input and decode it into the function's positional
        and keyword arguments. Missing input (``None``) is ``{}``. Raises
        :class:`ToolArgumentsError`."""
        if input is None:
            input = {}
        try:
            validate_json(input, self._signature.node.schema)
            decoded: dict[str, Any] = self._signature.node.decode(input, "")
        except JSONValidationError as error:
            raise ToolArgumentsError(self.definition.name, error) from None
        args = [decoded.pop(name) for name in self._signature.positional if name in decoded]
        return args, decoded

    async def call(self, input: JSON) -> JSON:
        """Run the tool for one call: validate and decode ``input``, run the function
        (a sync one in a worker thread), convert the return value to JSON data.

        Raises :class:`ToolArgumentsError` for bad input (the function does not run),
        :class:`ToolResultError` for a return value that is not JSON, and whatever the
        function raises. In a session each becomes the program's rejection message.
        """
        args, kwargs = self.parse_arguments(input)
        # The arguments come from JSON, checked at run time, not by the type checker.
        function: Callable[..., Any] = self.function
        if self.is_async:
            result = await function(*args, **kwargs)
        else:
            result = await trio.to_thread.run_sync(functools.partial(function, *args, **kwargs))
        try:
            return to_json(result)
        except ToolResultError as error:
            raise ToolResultError(
                f"tool `{self.definition.name}` returned a value that cannot be converted "
                f"to JSON: {error}"
            ) from None


@overload
def tool(
    function: Callable[_P, _R],
    /,
    *,
    name: str | None = None,
    namespace: str | None = None,
    description: str | None = None,
) -> PythonTool[_P, _R]: ...


@overload
def tool(
    *,
    name: str | None = None,
    namespace: str | None = None,
    description: str | None = None,
) -> Callable[[Callable[_P, _R]], PythonTool[_P, _R]]: ...


def tool(
    function: Callable[_P, _R] | None = None,
    /,
    *,
    name: str | None = None,
    namespace: str | None = None,
    description: str | None = None,
) -> PythonTool[_P, _R] | Callable[[Callable[_P, _R]], PythonTool[_P, _R]]:
    """Make a nested tool from a type-hinted function: ``@tool``, ``@tool(name=...,
    namespace=..., description=...)`` or ``tool(function, ...)``.

    ``name`` defaults to the function's ``__name__``, ``description`` to its docstring
    (cleaned; empty if none). With a ``namespace`` the raw name is
    ``<namespace>__<name>``, the JS identifier derived from it. Raises ``TypeError``
    for a parameter whose hint is missing or unsupported, or for ``*args``/``**kwargs``.
    See the module docstring for the supported hints. The result keeps ``function``'s
    signature for type checkers (see :class:`PythonTool`).
    """

    def make(function: Callable[_P, _R]) -> PythonTool[_P, _R]:
        tool_name = name if name is not None else getattr(function, "__name__", None)
        if not isinstance(tool_name, str) or not tool_name:
            raise TypeError("a tool needs a non-empty name (pass name=...)")
        if namespace is not None and not namespace:
            raise TypeError("a tool namespace must be a non-empty string or None")
        text = description if description is not None else inspect.getdoc(function) or ""
        raw_name = (
            tool_name if namespace is None else f"{namespace}{NAMESPACE_SEPARATOR}{tool_name}"
        )
        signature = _signature(function, tool_name)
        definition = ToolDefinition(
            name=raw_name,
            tool_name=ToolName(tool_name, namespace),
            description=text.strip(),
            kind=ToolKind.FUNCTION,
            input_schema=signature.node.schema,
            output_schema=signature.output_schema,
        )
        return PythonTool(
            function=function,
            definition=definition,
            is_async=_is_async(function),
            signature=signature,
        )

    if function is not None:
        return make(function)
    return make
