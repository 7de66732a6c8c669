"""Type hints to JSON Schema, and valid JSON back into the hinted Python values (the
compiler; reading a function's signature with it is :mod:`._signature`'s job).

A tool's parameters and return hint are compiled once, at decoration time, into a tree
of nodes; each node knows its schema and how to decode JSON that matched it (objects
into attrs classes, dataclasses, TypedDicts and pydantic models, lists into tuples,
values into enums).
"""

from __future__ import annotations

import collections.abc
import contextlib
import dataclasses
import enum
import functools
import types
import typing
from collections.abc import Callable
from typing import Any, Final, Literal

import attrs

from .._types import JSON
from ._json_schema import JSONValidationError, child_path, json_equal, json_type, validate_json
from ._pydantic import (
    ModelInputError,
    field_info_metadata,
    is_model_class,
    model_fields,
    validate_model,
)
from ._to_json import ToolResultError, to_json


class ToolArgumentsError(ValueError):
    """The input of a tool call does not match the tool's input schema. The message
    names the tool and the field, and is what the program's promise rejects with."""

    def __init__(self, tool: str, error: JSONValidationError) -> None:
        self.tool = tool
        self.error = error
        super().__init__(f"invalid arguments for tool `{tool}`: {error}")


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
            if json_equal(member.value, value):
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
            [self.item.decode(v, child_path(path, i)) for i, v in enumerate(value)]
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
            node.decode(v, child_path(path, i))
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
            key: self.value_node.decode(item, child_path(path, key)) for key, item in value.items()
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
class Field:
    name: str  # the JSON property name
    node: _Node
    required: bool
    default: Any = None
    has_default: bool = False


class ObjectNode(_Node):
    """A JSON object with known properties (TypedDict, attrs, dataclass, parameters);
    ``build`` makes the Python value from the decoded properties."""

    def __init__(self, fields: list[Field], build: Callable[[dict[str, Any]], Any]) -> None:
        self.fields = fields
        self.build = build
        self.schema = _object_schema(fields)

    def decode(self, value: JSON, path: str) -> Any:
        decoded = {
            field.name: field.node.decode(value[field.name], child_path(path, field.name))
            for field in self.fields
            if field.name in value
        }
        return self.build(decoded)


class _ModelNode(ObjectNode):
    """A pydantic model: the schema of its fields; decoding is the model's own
    validation, whose first complaint (a validator the schema cannot express) is
    reported at its place in the input."""

    def __init__(self, cls: type, fields: list[Field]) -> None:
        super().__init__(fields, functools.partial(validate_model, cls))
        self.cls = cls

    def decode(self, value: JSON, path: str) -> Any:
        try:
            return validate_model(self.cls, value)
        except ModelInputError as error:
            for part in error.location:
                path = child_path(path, part)
            raise JSONValidationError(path, error.message) from None


def _object_schema(fields: list[Field]) -> dict[str, Any]:
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


NONE_TYPES: Final = (None, type(None))
_TYPED_DICT_QUALIFIERS: Final = tuple(
    getattr(typing, name)
    for name in ("Required", "NotRequired", "ReadOnly")
    if hasattr(typing, name)
)
_TYPE_ALIAS_TYPES: Final[tuple[type, ...]] = tuple(
    getattr(typing, name) for name in ("TypeAliasType",) if hasattr(typing, name)
)


class Compiler:
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
        if hint in NONE_TYPES:
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
        fields: list[Field] = []
        for name, hint in hints.items():
            # An explicit Required/NotRequired wins: with `from __future__ import
            # annotations`, Python 3.11 cannot see it when computing __required_keys__.
            required = name in required_keys
            qualifier = typing.get_origin(hint)
            if qualifier is typing.Required:
                required = True
            elif qualifier is typing.NotRequired:
                required = False
            fields.append(Field(name, self._field_node(name, hint, cls), required=required))
        return ObjectNode(fields, dict)

    def _attrs(self, cls: type) -> _Node:
        hints = self._hints(cls)
        fields: list[Field] = []
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
                Field(
                    field.alias or field.name,
                    node,
                    required=self.output or not has_default,
                    default=field.default if shown else None,
                    has_default=shown and not self.output,
                )
            )
        return ObjectNode(fields, lambda kwargs: cls(**kwargs))

    def _dataclass(self, cls: type) -> _Node:
        hints = self._hints(cls)
        fields: list[Field] = []
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
                Field(
                    field.name,
                    node,
                    required=self.output or not has_default,
                    default=field.default if has_value_default else None,
                    has_default=has_value_default and not self.output,
                )
            )
        return ObjectNode(fields, lambda kwargs: cls(**kwargs))

    def _model(self, cls: type) -> _Node:
        fields: list[Field] = []
        for field in model_fields(cls):
            # Input by the name pydantic validates, output by the name it dumps.
            name = field.output_name if self.output else field.input_name
            node = self._field_node(name, field.hint, cls)
            if field.description is not None and "description" not in node.schema:
                node = _described(node, field.description)
            fields.append(
                Field(
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
    return Compiler(output=output).compile(hint).schema
