"""Decoding a large message batch: bounded in depth and in host bytes, done in slices.

Python's C JSON decoder holds the GIL for the whole of one call, and a batch of 16 Mi
characters of nested arrays takes it seconds (a cyclic garbage collection runs every
few hundred containers it creates, each visiting the containers made so far), builds
twenty to fifty times its size in Python objects, and cannot be stopped on the way.
:func:`decode_steps` decodes in Python, one value at a time (strings and numbers still
at C speed), without recursion; it stops at a depth, and counts what it builds as it
goes, stopping at a budget before the objects exist. It is a generator that yields
every few hundred values, so whoever drives it can stop between two yields and let
other work run (``_slices.py`` does, on the trio thread); :func:`decode_bounded` runs
it to its end in one go. :func:`host_bytes_steps` counts a decoded value the same way,
and :func:`text_depth_steps` checks a text's depth, both in steps too.

Why not a thread: this is Python code, which holds the GIL. A trio thread that waits
for the GIL behind a thread decoding waits up to ``sys.getswitchinterval()`` (5 ms)
*each time* it gives the GIL up: on every ``epoll`` wait, every read of a pipe, every
look at a worker's memory. A decode of 600 KiB on a thread (a third of a second) made
the trio thread's passes take 20 to 40 ms each, more under load; the same work in
slices of :data:`~._slices.SLICE_SECONDS` on the trio thread itself makes them take a
slice.

The isolate decodes small batches with the C decoder at once, where slicing would cost
more than the decoding (:func:`decode_inline` says which), and the others in slices
(see ``_backlog.py``).
"""

from __future__ import annotations

import itertools
import math
import re
import sys
from collections.abc import Generator
from json import scanner
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any, Final, TypeVar

#: Batches up to this many characters are decoded at once, with the C decoder: the
#: worst shape (nested empty arrays) takes it under two milliseconds at this size.
INLINE_BATCH_CHARS: Final = 8 * 1024

#: Batches up to this many characters are decoded at once too when they hold few
#: values (:data:`INLINE_VALUES`): mostly text, which the C decoder copies at hundreds
#: of megabytes a second. Counting their values takes under a millisecond.
INLINE_TEXT_CHARS: Final = 256 * 1024
INLINE_VALUES: Final = 2048


def decode_inline(text: str) -> bool:
    """Whether ``text`` (a batch) is decoded at once, with the C decoder: short, or mostly
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

#: Values (or containers counted) between two yields of a steps generator: a few
#: hundred microseconds of work, so that its driver can stop close to its deadline.
STEP_VALUES: Final = 256

T = TypeVar("T")
Steps = Generator[None, None, T]
"""Work done in steps: a generator that yields between them and returns its result."""


def finish(steps: Steps[T]) -> T:
    """Run ``steps`` to their end in one go; their result."""
    while True:
        try:
            next(steps)
        except StopIteration as stop:
            result: T = stop.value
            return result


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
    """:func:`decode_steps` run to its end in one go."""
    return finish(decode_steps(text, max_depth=max_depth, max_bytes=max_bytes, build=build))


def decode_steps(text: str, *, max_depth: int, max_bytes: int, build: bool = True) -> Steps[Any]:
    """``text`` decoded as strict JSON (no ``NaN``, no infinities), nesting at most
    ``max_depth`` arrays and objects deep, and taking at most ``max_bytes`` on the host
    beyond its strings' characters (those are bounded by the text's length itself: each
    string's header counts, its characters do not).

    Raises :class:`TooDeep`, :class:`TooLarge`, or ``ValueError`` for malformed text.
    With ``build`` false, only checks (and returns ``None``): no container is made, so
    a text over its budget is refused before it costs the host anything, not even the
    cyclic garbage collector's passes over what it built so far. Yields every
    :data:`STEP_VALUES` values.
    """
    skip: Any = _WHITESPACE.match  # (never None: the pattern matches the empty string)
    number = _NUMBER.match
    memo: dict[str, str] = {}  # object keys, each kept once (as the C decoder does)
    end = len(text)
    cost = 0
    # Open containers, innermost last: [container, key its next value goes under].
    stack: list[list[Any]] = []
    index = skip(text, 0).end()
    countdown = STEP_VALUES
    while True:
        countdown -= 1
        if not countdown:
            countdown = STEP_VALUES
            yield
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
    """:func:`text_depth_steps` run to its end in one go."""
    return finish(text_depth_steps(text, limit))


def text_depth_steps(text: str, limit: int) -> Steps[bool]:
    """Whether the JSON ``text`` nests deeper than ``limit`` (checked as
    :func:`decode_steps` checks, building nothing), in steps."""
    try:
        yield from decode_steps(text, max_depth=limit, max_bytes=sys.maxsize, build=False)
    except TooDeep:
        return True
    return False


#: What a list's children pair with in :func:`host_bytes_steps` (no key).
_NO_KEYS: Final = itertools.repeat(None)


def host_bytes(value: Any) -> int:
    """:func:`host_bytes_steps` run to its end in one go."""
    return finish(host_bytes_steps(value))


def host_bytes_steps(value: Any) -> Steps[int]:
    """What ``value`` (decoded JSON) holds on the host, counted as
    :func:`decode_steps` counts it, strings with their characters (iterative), in
    steps: yields every :data:`STEP_VALUES` values."""
    if isinstance(value, str):
        return string_bytes(value)
    if not isinstance(value, dict | list):
        return FLOAT_BYTES if isinstance(value, float) else sys.getsizeof(value)
    total = 0
    countdown = STEP_VALUES
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        countdown -= 1  # (each container counts, an empty one too)
        if not countdown:
            countdown = STEP_VALUES
            yield
        if isinstance(item, dict):
            total += DICT_BYTES + DICT_ITEM_BYTES * len(item)
            children: Any = item.items()
        else:
            total += LIST_BYTES + LIST_ITEM_BYTES * len(item)
            children = zip(_NO_KEYS, item, strict=False)
        for key, child in children:
            countdown -= 1
            if not countdown:
                countdown = STEP_VALUES
                yield
            if key is not None:
                total += sys.getsizeof(key)
            if isinstance(child, dict | list):
                stack.append(child)
            elif child is not None and not isinstance(child, bool):  # (singletons)
                total += sys.getsizeof(child)
    return total
