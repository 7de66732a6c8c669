"""Handles: the unguessable names of sessions and cells, which are capabilities.

Knowing a cell's handle is the right to ``wait`` on it or terminate it, and nothing
else; knowing a session's is the right to its stored values. So a handle is 144 random
bits from :mod:`secrets` (never a counter: a neighbour of a handle is no handle),
URL-safe text of a fixed shape, and a handle presented by a client is compared with a
known one in constant time (:func:`same_handle`), so that how long a comparison took
does not say how many leading characters matched.
"""

from __future__ import annotations

import hmac
import re
import secrets
from typing import Final

from ..._errors import MissingCell
from ..._types import CellId

__all__ = [
    "HANDLE_BITS",
    "SHOWN_CHARACTERS",
    "is_handle",
    "missing_cell",
    "new_handle",
    "same_handle",
]

_HANDLE_BYTES: Final = 18
HANDLE_BITS: Final = _HANDLE_BYTES * 8
"""Random bits in a handle (144: a guess succeeds with probability 2**-144)."""

_SHAPE: Final = re.compile(r"[A-Za-z0-9_-]{24}\Z")  # token_urlsafe(18): 24 characters
SHOWN_CHARACTERS: Final = 64
"""How much of a handle a client sent is echoed in an error text."""


def new_handle() -> str:
    """A fresh handle: 144 bits from the operating system's secure random source."""
    return secrets.token_urlsafe(_HANDLE_BYTES)


def is_handle(text: str) -> bool:
    """Whether ``text`` has a handle's shape; anything else is refused before any
    look-up (and is never a key of the store)."""
    return bool(_SHAPE.match(text))


def same_handle(given: str, known: str) -> bool:
    """Whether ``given`` is ``known``, in time independent of where they differ."""
    return hmac.compare_digest(given.encode("utf-8"), known.encode("utf-8"))


def missing_cell(given: str) -> MissingCell:
    """``exec cell <id> not found``: the one answer to a handle the store does not
    know, whether it never existed, belongs to another session, or was guessed (at
    most 64 characters of what the client sent are echoed)."""
    return MissingCell(CellId(given[:SHOWN_CHARACTERS]))
