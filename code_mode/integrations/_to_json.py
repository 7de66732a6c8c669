"""Tool return values to JSON data (:func:`to_json`)."""

from __future__ import annotations

import dataclasses
import enum
import math

import attrs

from .._types import JSON
from ._json_schema import MAX_DEPTH, child_path
from ._pydantic import (
    dump_model,
    is_model,
)


class ToolResultError(TypeError):
    """A tool returned a value that cannot be converted to JSON data."""


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
    if depth > MAX_DEPTH:
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
            _to_json(item, child_path(path, index), depth + 1, active)
            for index, item in enumerate(value)
        ]
    if isinstance(value, dict):
        result: dict[str, JSON] = {}
        for key, item in value.items():
            if isinstance(key, int) and not isinstance(key, bool):
                key = str(key)
            if not isinstance(key, str):
                raise _result_error(path, f"object key {key!r} is not a string")
            result[key] = _to_json(item, child_path(path, key), depth + 1, active)
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
