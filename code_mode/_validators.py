"""attrs validators for the numbers of the configuration and value objects.

Each error names the class and the field (``EngineConfig.worker_processes must be a
positive integer, got 0``), so a bad setting is found from the message alone. As with
attrs' own validators, a value of the wrong type raises ``TypeError`` and one out of
range ``ValueError``. Booleans are refused where numbers are expected: ``True`` is an
``int`` to Python, never a limit a user meant.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

import attrs

Validator = Callable[[Any, "attrs.Attribute[Any]", Any], None]


def _is_number(value: Any, *, integer: bool) -> bool:
    kinds = int if integer else int | float
    return isinstance(value, kinds) and not isinstance(value, bool)


def _check(kind: str, test: Callable[[Any], bool], *, integer: bool) -> Validator:
    noun = "integer" if integer else "number"

    def validate(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        problem = f"{type(instance).__name__}.{attribute.name} must be {kind} {noun}, got {value!r}"
        if not _is_number(value, integer=integer):
            raise TypeError(problem)
        if not test(value):  # NaN fails every comparison
            raise ValueError(problem)

    return validate


positive = _check("a positive", lambda value: value > 0, integer=False)
"""A number above zero (``math.inf`` allowed: no limit)."""

non_negative = _check("a non-negative", lambda value: value >= 0, integer=False)
"""A number, zero or more."""

positive_int = _check("a positive", lambda value: value > 0, integer=True)
"""An integer above zero."""

non_negative_int = _check("a non-negative", lambda value: value >= 0, integer=True)
"""An integer, zero or more."""

positive_finite = _check("a positive finite", lambda value: 0 < value < math.inf, integer=False)
"""A number above zero and below infinity (a number of seconds that must end)."""


def optional(validator: Validator) -> Validator:
    """``validator``, or ``None`` (the setting is off)."""

    def validate(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is not None:
            validator(instance, attribute, value)

    return validate


#: What a non-ASCII ``str`` takes beyond its characters (``sys.getsizeof``, CPython).
_WIDE_HEADER = sys.getsizeof("\xe9") - 2


def utf16_length(text: str) -> int:
    """``text``'s length in UTF-16 code units, as V8 counts a string's length (the
    stored-values limit, columns of a syntax error): its ``len`` unless it holds
    characters beyond the BMP (only a 4-byte-wide ``str`` can: its width is read from
    its size at once, where encoding megabytes of text took tens of milliseconds of the
    trio thread)."""
    if text.isascii():
        return len(text)
    if (sys.getsizeof(text) - _WIDE_HEADER) // (len(text) + 1) < 4:
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2
