"""pydantic models in ``@tool`` hints, without depending on pydantic.

The OpenAI, Anthropic and MCP SDKs and most agent frameworks describe tool arguments
with pydantic models, so :func:`~.python_tools.tool` accepts them as parameters and
results. pydantic stays optional: this module never imports it. A model class (or a
``Field``) can only exist once the host has imported pydantic, so ``sys.modules`` says
whether there is anything to recognise, and importing ``code_mode`` costs nothing.

What is read from a model: its fields (by the names they have on the wire: the
validation alias for input, the serialization alias for output), their annotations
and ``Field`` constraints (compiled by the tool's own schema generator, so a model's
schema looks like an attrs class's), descriptions and defaults. The model's own
validation still runs on the decoded input, so validators the schema cannot express
reject with a message in the same shape.
"""

from __future__ import annotations

import sys
import typing
from types import ModuleType
from typing import Any

import attrs

__all__ = [
    "ModelField",
    "ModelInputError",
    "dump_model",
    "field_info_metadata",
    "is_model",
    "is_model_class",
    "model_fields",
    "validate_model",
]


def _pydantic() -> ModuleType | None:
    module = sys.modules.get("pydantic")
    # A partly imported pydantic (during its own import) has no BaseModel yet.
    return module if module is not None and hasattr(module, "BaseModel") else None


def is_model_class(hint: object) -> bool:
    """Whether ``hint`` is a pydantic (v2) ``BaseModel`` subclass."""
    pydantic = _pydantic()
    return pydantic is not None and isinstance(hint, type) and issubclass(hint, pydantic.BaseModel)


def is_model(value: object) -> bool:
    """Whether ``value`` is an instance of a pydantic (v2) model."""
    pydantic = _pydantic()
    return pydantic is not None and isinstance(value, pydantic.BaseModel)


def field_info_metadata(item: object) -> list[Any] | None:
    """The constraints (``MinLen``, ``Ge``, pattern, ...) a ``Field(...)`` in
    ``Annotated`` metadata carries, or ``None`` when ``item`` is no ``Field``."""
    pydantic = _pydantic()
    if pydantic is None or not isinstance(item, pydantic.fields.FieldInfo):
        return None
    return list(item.metadata)


@attrs.frozen
class ModelField:
    """One field of a model, as a tool schema needs it."""

    input_name: str
    output_name: str
    hint: Any  # the annotation, in ``Annotated`` with its constraints if it has any
    description: str | None
    required: bool
    has_value_default: bool  # a default value to show (not a factory)
    default: Any = None


def model_fields(cls: type) -> list[ModelField]:
    """The fields of model ``cls``; ``TypeError`` when the model is not fully defined
    (a forward reference pydantic cannot resolve)."""
    if not getattr(cls, "__pydantic_complete__", True):
        try:
            cls.model_rebuild()  # type: ignore[attr-defined]
        except Exception as error:
            raise TypeError(f"model {cls.__qualname__} is not fully defined: {error}") from None
    fields: list[ModelField] = []
    for name, info in cls.model_fields.items():  # type: ignore[attr-defined]
        validation_alias = info.validation_alias
        input_name = validation_alias if isinstance(validation_alias, str) else info.alias
        hint = info.annotation
        if info.metadata:
            hint = typing.Annotated[(hint, *info.metadata)]
        has_value_default = not info.is_required() and info.default_factory is None
        fields.append(
            ModelField(
                input_name=input_name or name,
                output_name=info.serialization_alias or info.alias or name,
                hint=hint,
                description=info.description,
                required=info.is_required(),
                has_value_default=has_value_default,
                default=info.default if has_value_default else None,
            )
        )
    return fields


class ModelInputError(ValueError):
    """The model's own validation refused an input: ``location`` is where, relative to
    the model (keys and indexes), ``message`` is pydantic's message for it."""

    def __init__(self, location: tuple[str | int, ...], message: str) -> None:
        self.location = location
        self.message = message
        super().__init__(message)


def validate_model(cls: type, value: object) -> Any:
    """Build a model instance from JSON data keyed by wire names; raise
    :class:`ModelInputError` for the first problem pydantic finds."""
    pydantic = _pydantic()
    assert pydantic is not None, "a model class exists only once pydantic is imported"
    try:
        return cls.model_validate(value)  # type: ignore[attr-defined]
    except pydantic.ValidationError as error:
        first = error.errors(include_url=False)[0]
        location = tuple(part for part in first["loc"] if isinstance(part, str | int))
        raise ModelInputError(location, str(first["msg"])) from None


def dump_model(value: Any) -> Any:
    """A model instance as JSON data by wire names (serialization aliases), the names
    its output schema shows."""
    return value.model_dump(mode="json", by_alias=True)
