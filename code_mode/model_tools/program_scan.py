"""Finding a program's ``tools.<name>(...)`` calls and their literal arguments, without
running it (for ``CodeModeSession(check_programs=True)``).

This is not a JavaScript parser. It tokenizes the source (strings, template literals
and the code inside their ``${...}``, comments, regular expression literals by the
usual "what came before the slash" rule) and looks for ``tools.x(`` ``tools?.x(`` and
``tools["x"](`` where ``tools`` is the global (not a property of something else).
The first argument is read when it is a literal: a string, a number, ``true``,
``false``, ``null``, ``undefined``, an array of literals, or an object literal. An
object literal is read entry by entry: ``key: <literal>`` gives the key's JSON value,
``key: <anything else>``, a shorthand ``key`` or a method gives the key with an
unknown value, and a spread (``...x``), a computed key (``[k]: v``) or an accessor
makes the object *incomplete* (its key set is unknown).

Everything uncertain is reported as such (:data:`UNKNOWN`, ``complete=False``,
``shadowed``), so that a checker built on this only ever claims what a run would
show. The result also tells, for each call, whether the program visibly handles its
rejection: inside a ``try`` block, or as an argument of ``Promise.allSettled``,
``Promise.any``, ``as_settled`` or ``stream_settled``, or with ``.catch``/``.then``
chained onto it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final, TypeAlias

import attrs

from .._types import JSON

__all__ = ["UNDEFINED", "UNKNOWN", "CallSite", "NoArgument", "ObjectLiteral", "scan_tool_calls"]


class _Marker:
    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


UNKNOWN: Final = _Marker("UNKNOWN")
"""A value that is not a literal: known only when the program runs."""

UNDEFINED: Final = _Marker("UNDEFINED")
"""The literal ``undefined`` (``JSON.stringify`` drops such an object entry)."""


@attrs.frozen
class NoArgument:
    """``tools.x()`` or ``tools.x(undefined)``: the tool gets no input."""


@attrs.frozen
class ObjectLiteral:
    """An object literal argument: its keys in the order ``JSON.stringify`` writes
    them (integer keys first, ascending), each with its JSON value, :data:`UNKNOWN` or
    :data:`UNDEFINED`. ``complete``: no spread, computed key or accessor."""

    entries: dict[str, object]
    complete: bool


@attrs.frozen
class CallSite:
    """One ``tools.<key>(...)`` call: ``argument`` is :class:`NoArgument`, an
    :class:`ObjectLiteral`, another literal's JSON value, or :data:`UNKNOWN`.
    ``handled``: the program visibly deals with the call's rejection."""

    key: str
    argument: object
    handled: bool


@attrs.frozen
class ScanResult:
    """The calls in source order; ``shadowed`` when ``tools`` is used other than as
    ``tools.x``/``tools[...]`` (a local ``tools`` may hide the global: check nothing)."""

    calls: list[CallSite]
    shadowed: bool


_TOKEN: Final = re.compile(
    r"""
    (?P<space>\s+)
    |(?P<comment>//[^\n]*|/\*.*?(?:\*/|\Z))
    |(?P<name>[A-Za-z_$\u0080-\uffff][\w$\u0080-\uffff]*)
    |(?P<num>(?:0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][+-]?\d+)?)n?)
    |(?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
    |(?P<punct>\?\.(?!\d)|\.\.\.|=>|[(){}\[\],:;.?`/#]|[^\s\w])
    """,
    re.VERBOSE | re.DOTALL,
)

#: After these, a `/` starts a regular expression rather than dividing.
_REGEX_AFTER_NAMES: Final = frozenset(
    [
        "return",
        "typeof",
        "case",
        "do",
        "else",
        "in",
        "of",
        "new",
        "delete",
        "void",
        "throw",
        "instanceof",
        "yield",
        "await",
    ]
)
_REGEX: Final = re.compile(r"/(?:[^/\\\[\n]|\\.|\[(?:[^\]\\\n]|\\.)*\])+/[A-Za-z]*")
_TEMPLATE_TEXT: Final = re.compile(r"[^`\\$]+")
_INDEX_KEY: Final = re.compile(r"^(?:0|[1-9]\d{0,9})$")
#: Enclosing calls that settle their arguments' rejections.
_SETTLING: Final = frozenset({"allSettled", "any", "as_settled", "stream_settled"})


_Token: TypeAlias = tuple[str, str]  # (kind, text)


def _tokenize(source: str, out: list[_Token], start: int = 0, *, until_brace: bool = False) -> int:
    """Tokens of ``source`` from ``start`` into ``out``; returns where it stopped (the
    end, or after the ``}`` closing a template's ``${`` when ``until_brace``). A
    template literal becomes ``(`` its expressions' tokens ``)`` (so a checker sees
    one opaque group); an unterminated construct ends the source."""
    depth = 0
    position = start
    length = len(source)
    while position < length:
        char = source[position]
        if char == "`":
            out.append(("template", "`"))
            out.append(("punct", "("))
            position = _template(source, position + 1, out)
            out.append(("punct", ")"))
            continue
        if char == "/" and _regex_allowed(out):
            match = _REGEX.match(source, position)
            if match is not None:
                out.append(("regex", match.group()))
                position = match.end()
                continue
        match = _TOKEN.match(source, position)
        if match is None:  # pragma: no cover - the last alternative matches anything
            position += 1
            continue
        kind = match.lastgroup or "punct"
        text = match.group()
        position = match.end()
        if kind in ("space", "comment"):
            continue
        if until_brace and kind == "punct":
            if text == "{":
                depth += 1
            elif text == "}":
                if depth == 0:
                    return position
                depth -= 1
        out.append((kind, text))
    return position


def _template(source: str, position: int, out: list[_Token]) -> int:
    """Skip a template literal's text from ``position``, tokenizing each ``${...}``."""
    length = len(source)
    while position < length:
        plain = _TEMPLATE_TEXT.match(source, position)
        if plain is not None:
            position = plain.end()
            continue
        char = source[position]
        if char == "\\":
            position += 2
        elif char == "`":
            return position + 1
        elif char == "$" and source.startswith("${", position):
            out.append(("punct", "("))
            position = _tokenize(source, out, position + 2, until_brace=True)
            out.append(("punct", ")"))
        else:
            position += 1
    return position


def _regex_allowed(tokens: list[_Token]) -> bool:
    if not tokens:
        return True
    kind, text = tokens[-1]
    if kind == "name":
        return text in _REGEX_AFTER_NAMES
    if kind in ("num", "str", "regex", "template"):
        return False
    return text not in (")", "]", "}")


def scan_tool_calls(source: str) -> ScanResult:
    """The ``tools.x(...)`` calls of ``source`` (see the module docstring)."""
    tokens: list[_Token] = []
    _tokenize(source, tokens)
    return _Scanner(tokens).scan()


class _Scanner:
    def __init__(self, tokens: list[_Token]) -> None:
        self._tokens = tokens

    def _text(self, index: int) -> str:
        return self._tokens[index][1] if index < len(self._tokens) else ""

    def _kind(self, index: int) -> str:
        return self._tokens[index][0] if index < len(self._tokens) else ""

    def scan(self) -> ScanResult:
        calls: list[CallSite] = []
        shadowed = False
        # What each open bracket belongs to: "try", a settling call, or nothing.
        stack: list[str] = []
        index = 0
        while index < len(self._tokens):
            kind, text = self._tokens[index]
            if kind == "punct" and text in "({[":
                before = self._text(index - 1) if index else ""
                label = ""
                if text == "{" and before == "try":
                    label = "try"
                elif text == "(" and before in _SETTLING:
                    label = "settling"
                stack.append(label)
            elif kind == "punct" and text in ")}]":
                if stack:
                    stack.pop()
            elif kind == "name" and text == "tools" and not self._is_property(index):
                site, end = self._call_at(index, handled=any(stack))
                if site is None and end is None:
                    shadowed = True
                elif site is not None:
                    calls.append(site)
            index += 1
        return ScanResult(calls, shadowed)

    def _is_property(self, index: int) -> bool:
        """``x.tools``, ``x?.tools``, ``#tools``, or an object key ``{tools: ...}``."""
        if index == 0:
            return False
        before = self._text(index - 1)
        if before in (".", "?.", "#"):
            return True
        return self._text(index + 1) == ":" and before in ("{", ",")

    def _call_at(self, index: int, *, handled: bool) -> tuple[CallSite | None, int | None]:
        """The call starting at the global ``tools`` at ``index``: ``(site, end)``;
        ``(None, index)`` for a member use that is no call; ``(None, None)`` for a use
        of ``tools`` that is no member access (it may be a local binding)."""
        after = self._text(index + 1)
        if after in (".", "?."):
            if self._kind(index + 2) != "name":
                return None, index
            key = self._tokens[index + 2][1]
            position = index + 3
        elif after == "[":
            if self._kind(index + 2) != "str" or self._text(index + 3) != "]":
                return None, index
            literal = _string_value(self._tokens[index + 2][1])
            if not isinstance(literal, str):
                return None, index
            key = literal
            position = index + 4
        else:
            return None, None
        if self._text(position) == "?.":
            position += 1
        if self._text(position) != "(":
            return None, index
        argument, end = self._argument(position + 1)
        # `.catch(...)`/`.then(...)` on the call's promise handle its rejection.
        chained = self._text(end) in (".", "?.") and self._text(end + 1) in ("catch", "then")
        return CallSite(key, argument, handled or chained), end

    def _argument(self, position: int) -> tuple[object, int]:
        """The first argument from ``position`` (after ``(``), and the index after the
        call's ``)``."""
        if self._text(position) == ")":
            return NoArgument(), position + 1
        value, after = self._value(position, argument=True)
        if value is UNDEFINED:
            value = NoArgument()
        if self._text(after) not in (",", ")"):
            value = UNKNOWN
        return value, self._call_end(after) + 1

    def _call_end(self, position: int) -> int:
        """The index of the ``)`` closing the call whose argument list goes on at
        ``position`` (later arguments skipped)."""
        position = self._skip_expression(position)
        while self._text(position) == ",":
            position = self._skip_expression(position + 1)
        return position

    def _skip_expression(self, position: int) -> int:
        """The index of the ``,`` or closing bracket that ends the expression at
        ``position``."""
        depth = 0
        while position < len(self._tokens):
            text = self._text(position)
            if self._kind(position) == "punct":
                if text in "([{":
                    depth += 1
                elif text in ")]}":
                    if depth == 0:
                        return position
                    depth -= 1
                elif text == "," and depth == 0:
                    return position
            position += 1
        return position

    def _value(self, position: int, *, argument: bool = False) -> tuple[object, int]:
        """A literal value at ``position`` and the index after it, or
        :data:`UNKNOWN` and the index of the ``,``/closer ending the expression. An
        object literal is an :class:`ObjectLiteral` as the ``argument``, else its JSON
        (or :data:`UNKNOWN` unless all of it is literal)."""
        kind, text = self._kind(position), self._text(position)
        value: object = UNKNOWN
        after = position + 1
        if kind == "str":
            value = _string_value(text)
        elif kind == "num":
            value = _number_value(text)
        elif kind == "punct" and text in ("-", "+") and self._kind(position + 1) == "num":
            number = _number_value(self._text(position + 1))
            if number is not UNKNOWN:
                value = -number if text == "-" else number  # type: ignore[operator]
            after = position + 2
        elif kind == "name" and text in ("true", "false", "null", "undefined"):
            value = {"true": True, "false": False, "null": None, "undefined": UNDEFINED}[text]
        elif kind == "punct" and text == "[":
            value, after = self._array(position + 1)
        elif kind == "punct" and text == "{":
            literal, after = self._object(position + 1)
            value = literal if argument else _object_json(literal)
        if value is UNKNOWN or self._text(after) not in (",", ")", "]", "}"):
            return UNKNOWN, self._skip_expression(position)
        return value, after

    def _array(self, position: int) -> tuple[object, int]:
        items: list[JSON] = []
        literal = True
        while self._text(position) not in ("]", ""):
            if self._text(position) in (",", "..."):  # a hole or a spread
                literal = False
                position = self._skip_expression(position + 1)
            else:
                value, position = self._value(position)
                if value is UNKNOWN:
                    literal = False
                items.append(None if value is UNDEFINED else value)
            if self._text(position) == ",":
                position += 1
        return (items if literal else UNKNOWN), position + 1

    def _object(self, position: int) -> tuple[ObjectLiteral, int]:
        entries: dict[str, object] = {}
        complete = True
        while self._text(position) not in ("}", ""):
            kind, text = self._kind(position), self._text(position)
            following = self._text(position + 1)
            key: str | None = None
            if kind in ("name", "str", "num") and following == ":":
                key = _key(kind, text)
                if key is None:
                    complete = False
                    position = self._skip_expression(position + 2)
                else:
                    entries[key], position = self._value(position + 2)
            elif kind == "name" and following in (",", "}"):
                entries[text] = UNKNOWN  # shorthand: a variable's value
                position += 1
            elif kind in ("name", "str", "num") and following == "(":
                key = _key(kind, text)
                if key is None:
                    complete = False
                else:
                    entries[key] = UNKNOWN  # a method: JSON.stringify leaves it out
                position = self._skip_expression(position + 1)
            else:  # spread, computed key, accessor, async/generator method
                complete = False
                position = self._skip_expression(position)
            if self._text(position) == ",":
                position += 1
        ordered = {k: entries[k] for k in sorted(entries, key=_property_order(entries))}
        return ObjectLiteral(ordered, complete), position + 1


def _property_order(entries: dict[str, object]) -> Callable[[str], tuple[int, int]]:
    """JavaScript's own-key order: array-index keys ascending, then the others in
    insertion order."""
    insertion = {key: index for index, key in enumerate(entries)}

    def order(key: str) -> tuple[int, int]:
        if _INDEX_KEY.match(key) and int(key) < 2**32 - 1:
            return 0, int(key)
        return 1, insertion[key]

    return order


def _object_json(literal: ObjectLiteral) -> object:
    """A nested object literal's JSON value, when all of it is literal (``undefined``
    entries left out, as ``JSON.stringify`` does), else :data:`UNKNOWN`."""
    if not literal.complete or any(value is UNKNOWN for value in literal.entries.values()):
        return UNKNOWN
    return {key: value for key, value in literal.entries.items() if value is not UNDEFINED}


def _key(kind: str, text: str) -> str | None:
    if kind == "name":
        return text
    if kind == "str":
        value = _string_value(text)
        return value if isinstance(value, str) else None
    number = _number_value(text)
    return str(number) if isinstance(number, int) and not isinstance(number, bool) else None


def _string_value(text: str) -> object:
    """A string literal's value (:data:`UNKNOWN` when it has escapes: not decoded)."""
    body = text[1:-1]
    return UNKNOWN if "\\" in body else body


def _number_value(text: str) -> object:
    """A number literal as ``JSON.stringify`` writes it: an integral value as an
    ``int`` (within 2**53), otherwise a ``float``; :data:`UNKNOWN` for a BigInt."""
    if text.endswith("n"):
        return UNKNOWN
    clean = text.replace("_", "")
    try:
        if clean[:2].lower() in ("0x", "0o", "0b"):
            number: float = int(clean, 0)
        else:
            number = float(clean)
    except ValueError:
        return UNKNOWN
    if number == int(number) and abs(number) < 2**53:
        return int(number)
    return float(number)
