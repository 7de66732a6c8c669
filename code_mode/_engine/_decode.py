"""Decoding a large message batch: bounded in depth and in host bytes, fit for a thread.

Python's C JSON decoder holds the GIL for the whole of one call, and a batch of 16 Mi
characters of nested arrays takes it seconds (a cyclic garbage collection runs every
few hundred containers it creates, each visiting the containers made so far), builds
twenty to fifty times its size in Python objects, and cannot be stopped on the way.
Run on another thread it would still stall the trio thread for as long, since that
thread needs the GIL too. :func:`decode_bounded` decodes in Python, one value at a
time (strings and numbers still at C speed), so the interpreter switches threads
every few milliseconds (``sys.getswitchinterval()``); it walks without recursion, stops
at a depth, and counts what it builds as it goes, stopping at a budget before the
objects exist. :func:`host_bytes` counts a decoded value the same way.

The isolate decodes small batches on the trio thread with the C decoder, where a
thread's hop would cost more than the decoding (:func:`decode_inline` says which),
and hands the others to this module on a thread (see ``isolate.py``).
"""

from __future__ import annotations

import math
import re
import sys
from json import scanner
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any, Final

#: Batches up to this many characters are decoded on the trio thread: the worst shape
#: (nested empty arrays) takes the C decoder under two milliseconds at this size.
INLINE_BATCH_CHARS: Final = 8 * 1024

#: Batches up to this many characters are decoded on the trio thread too when they
#: hold few values (:data:`INLINE_VALUES`): mostly text, which the C decoder copies at
#: hundreds of megabytes a second. Counting their values takes under a millisecond.
INLINE_TEXT_CHARS: Final = 256 * 1024
INLINE_VALUES: Final = 2048


def decode_inline(text: str) -> bool:
    """Whether ``text`` (a batch) is decoded on the trio thread: short, or mostly
    strings (few brackets and commas, counted at C speed; those inside strings count
    too, which only errs towards the thread)."""
    length = len(text)
    if length <= INLINE_BATCH_CHARS:
        return True
    if length > INLINE_TEXT_CHARS:
        return False
    return text.count(",") + text.count("[") + text.count("{") <= INLINE_VALUES


#: What each value costs on the host, as ``sys.getsizeof`` counts it (CPython 3.11 on
#: 64 bits), plus the reference that holds it: a list's slot, or a dict's entry.
LIST_BYTES: Final = sys.getsizeof([])
DICT_BYTES: Final = sys.getsizeof({})
LIST_ITEM_BYTES: Final = 9  # a pointer, and a list's over-allocation as it grows
DICT_ITEM_BYTES: Final = 40  # a dict's entry and index slot, at its usual load
FLOAT_BYTES: Final = sys.getsizeof(0.5)
STRING_HEADER_BYTES: Final = sys.getsizeof("")

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_NUMBER: Final = scanner.NUMBER_RE


#: What stands for a container while only checking (``build=False``).
_LIST: Final = object()
_DICT: Final = object()


class TooDeep(ValueError):
    """The text nests deeper than the depth it was allowed."""


class TooLarge(ValueError):
    """Decoding the text would take more host bytes than its budget."""


def string_bytes(text: str) -> int:
    """What a ``str`` of ``text`` holds (``sys.getsizeof``, at C speed)."""
    return sys.getsizeof(text)


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]} is out of range")
    return value


def decode_bounded(text: str, *, max_depth: int, max_bytes: int, build: bool = True) -> Any:
    """``text`` decoded as strict JSON (no ``NaN``, no infinities), nesting at most
    ``max_depth`` arrays and objects deep, and taking at most ``max_bytes`` on the host
    beyond its strings' characters (those are bounded by the text's length itself: each
    string's header counts, its characters do not).

    Raises :class:`TooDeep`, :class:`TooLarge`, or ``ValueError`` for malformed text.
    With ``build`` false, only checks (and returns ``None``): no container is made, so
    a text over its budget is refused before it costs the host anything, not even the
    cyclic garbage collector's passes over what it built so far.
    """
    skip: Any = _WHITESPACE.match  # (never None: the pattern matches the empty string)
    number = _NUMBER.match
    memo: dict[str, str] = {}  # object keys, each kept once (as the C decoder does)
    end = len(text)
    cost = 0
    # Open containers, innermost last: [container, key its next value goes under].
    stack: list[list[Any]] = []
    index = skip(text, 0).end()
    while True:
        # -- one value at `index` ----------------------------------------------------
        char = text[index : index + 1]
        value: Any
        if char == "[" or char == "{":
            if len(stack) >= max_depth:
                raise TooDeep(f"nesting deeper than {max_depth}")
            index = skip(text, index + 1).end()
            if char == "[":
                cost += LIST_BYTES
                if text.startswith("]", index):
                    value, index = [] if build else None, index + 1
                else:
                    stack.append([[] if build else _LIST, None])
                    continue
            else:
                cost += DICT_BYTES
                if text.startswith("}", index):
                    value, index = {} if build else None, index + 1
                else:
                    key, index = _key(text, index, memo, skip)
                    cost += STRING_HEADER_BYTES
                    stack.append([{} if build else _DICT, key])
                    continue
        elif char == '"':
            value, index = scanstring(text, index + 1, True)
            cost += STRING_HEADER_BYTES
        else:
            match = number(text, index)
            if match is not None:
                integer, fraction, exponent = match.groups()
                if fraction or exponent:
                    value = _finite(integer + (fraction or "") + (exponent or ""))
                    cost += FLOAT_BYTES
                else:
                    value = int(integer)
                    cost += sys.getsizeof(value)
                index = match.end()
            elif text.startswith("null", index):
                value, index = None, index + 4
            elif text.startswith("true", index):
                value, index = True, index + 4
            elif text.startswith("false", index):
                value, index = False, index + 5
            else:
                raise ValueError(f"expecting a value at character {index}")
        # -- the value is whole: into its container; close the containers it ends ----
        while True:
            if cost > max_bytes:
                raise TooLarge(f"more than {max_bytes} bytes")
            if not stack:
                if skip(text, index).end() != end:
                    raise ValueError(f"extra data at character {index}")
                return value if build else None
            frame = stack[-1]
            container = frame[0]
            if type(container) is list:
                container.append(value)
                cost += LIST_ITEM_BYTES
                closer = "]"
            elif type(container) is dict:
                container[frame[1]] = value
                cost += DICT_ITEM_BYTES
                closer = "}"
            elif container is _LIST:
                cost += LIST_ITEM_BYTES
                closer = "]"
            else:
                cost += DICT_ITEM_BYTES
                closer = "}"
            index = skip(text, index).end()
            char = text[index : index + 1]
            if char == ",":
                index = skip(text, index + 1).end()
                if closer == "}":
                    frame[1], index = _key(text, index, memo, skip)
                    cost += STRING_HEADER_BYTES
                break
            if char != closer:
                raise ValueError(f"expecting ',' or {closer!r} at character {index}")
            index += 1
            stack.pop()
            value = container if build else None


def _key(text: str, index: int, memo: dict[str, str], skip: Any) -> tuple[str, int]:
    """An object's key at ``index`` and its colon; the index of the value after them."""
    if not text.startswith('"', index):
        raise ValueError(f"expecting a property name at character {index}")
    key, index = scanstring(text, index + 1, True)
    key = memo.setdefault(key, key)
    index = skip(text, index).end()
    if not text.startswith(":", index):
        raise ValueError(f"expecting ':' at character {index}")
    return key, skip(text, index + 1).end()


def text_depth_exceeds(text: str, limit: int) -> bool:
    """Whether the JSON ``text`` nests deeper than ``limit`` (checked as
    :func:`decode_bounded` checks, building nothing: fit for a thread)."""
    try:
        decode_bounded(text, max_depth=limit, max_bytes=sys.maxsize, build=False)
    except TooDeep:
        return True
    return False


def host_bytes(value: Any) -> int:
    """What ``value`` (decoded JSON) holds on the host, counted as
    :func:`decode_bounded` counts it, strings with their characters (iterative)."""
    if isinstance(value, str):
        return string_bytes(value)
    if not isinstance(value, dict | list):
        return FLOAT_BYTES if isinstance(value, float) else sys.getsizeof(value)
    total = 0
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            total += DICT_BYTES + DICT_ITEM_BYTES * len(item)
            for key, child in item.items():
                total += sys.getsizeof(key)
                if isinstance(child, dict | list):
                    stack.append(child)
                elif child is not None and not isinstance(child, bool):  # (singletons)
                    total += sys.getsizeof(child)
        else:
            total += LIST_BYTES + LIST_ITEM_BYTES * len(item)
            for child in item:
                if isinstance(child, dict | list):
                    stack.append(child)
                elif child is not None and not isinstance(child, bool):  # (singletons)
                    total += sys.getsizeof(child)
    return total
