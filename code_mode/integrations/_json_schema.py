"""A small JSON Schema validator for the subset :mod:`.python_tools` generates.

Tool input is checked against the schema generated from the tool's type hints before
the function runs. Only the keywords the generator emits are understood (types,
properties and required, items and prefixItems, additionalProperties, anyOf, enum and
const, bounds, lengths and patterns), so no dependency is needed, and errors name the
field the way a model can act on: ``field `filters.tags[2]`: expected string, got number``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any, Final

from .._types import JSON

MAX_DEPTH: Final = 256
"""Nesting at which :func:`~._to_json.to_json` and :func:`validate_json` give up
(cycles, hostile input); the runtime's own ``max_json_depth`` is lower anyway."""


class JSONValidationError(ValueError):
    """A JSON value does not match a schema. ``path`` is where (``""`` for the value
    itself, else e.g. ``filters.tags[2]``); ``problem`` is what is wrong.
    ``str(error)`` is ``field `<path>`: <problem>``, or just the problem at the root."""

    def __init__(self, path: str, problem: str, *, mismatch: bool = False) -> None:
        self.path = path
        self.problem = problem
        self.mismatch = mismatch  # the value's kind itself was wrong (type/enum/const)
        super().__init__(f"field `{path}`: {problem}" if path else problem)


# --- JSON Schema validation -------------------------------------------------------------

_IDENTIFIER: Final = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")


def child_path(path: str, key: str | int) -> str:
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
    if depth > MAX_DEPTH:
        raise JSONValidationError(path, "value is nested too deeply")
    if schema is False:
        raise JSONValidationError(path, "no value is allowed here", mismatch=True)
    if not isinstance(schema, dict):
        return
    got = json_type(value)
    if "const" in schema and not json_equal(value, schema["const"]):
        raise JSONValidationError(
            path, f"expected {_literal(schema['const'])}, got {_describe(value)}", mismatch=True
        )
    enum_values = schema.get("enum")
    if isinstance(enum_values, list) and not any(json_equal(value, v) for v in enum_values):
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
            raise JSONValidationError(child_path(path, name), "missing required field")
    additional = schema.get("additionalProperties", True)
    for key, item in value.items():
        child = child_path(path, key)
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
        child = child_path(path, index)
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


def json_equal(left: JSON, right: JSON) -> bool:
    """JSON equality: ``true`` is not ``1``, ``1`` is ``1.0``."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(json_equal, left, right))
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    if _is_type(left, "number") and _is_type(right, "number"):
        return bool(left == right)
    return type(left) is type(right) and bool(left == right)
