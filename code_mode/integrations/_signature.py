"""Reading a tool function's signature: its parameters as one object schema, its return
hint as the output schema (the type hints themselves are compiled by :mod:`._schema`)."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any

import attrs

from ._schema import NONE_TYPES, Compiler, Field, ObjectNode


@attrs.frozen
class Signature:
    node: ObjectNode
    positional: tuple[str, ...]  # positional-only parameter names, in order
    output_schema: dict[str, Any] | None
    output_hint_is_none: bool


def signature_of(function: Callable[..., Any], tool_name: str) -> Signature:
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError) as error:
        raise TypeError(f"tool `{tool_name}`: cannot read the signature: {error}") from None
    try:
        hints = typing.get_type_hints(function, include_extras=True)
    except NameError as error:
        raise TypeError(f"tool `{tool_name}`: cannot resolve a type hint: {error}") from None
    compiler = Compiler(output=False)
    fields: list[Field] = []
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
            Field(
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
            output_schema = Compiler(output=True).compile(return_hint).schema
        except TypeError:
            output_schema = None  # an unsupported return hint: the model sees `unknown`
    node = ObjectNode(fields, dict)
    return Signature(node, tuple(positional), output_schema, return_hint in NONE_TYPES)


def input_schema_for(function: Callable[..., Any]) -> dict[str, Any]:
    """The input JSON Schema :func:`tool` would generate for ``function``."""
    return signature_of(function, getattr(function, "__name__", "tool")).node.schema
