"""A program's module syntax, for a runtime that runs it as an async function body.

The reference evaluates a program as an ES module (``exec_main.mjs``). mini-racer can
only evaluate scripts, so the runtime compiles the program as the body of an async
function (``js/start.js``), which gives strict mode, top-level ``await`` and a
``this`` of ``undefined`` already. What a function body does not accept is rewritten
here, before the program goes to its isolate, keeping every character where it was (a
syntax error elsewhere is still reported at its own line and column):

* ``export`` in front of a declaration is blanked (the declaration stays);
  ``export default <expression>`` becomes ``0, <expression>`` (a named ``function`` or
  ``class`` after ``export default`` stays a declaration); ``export { ... }`` lists are
  blanked;
* a static ``import`` (and ``export ... from``) is blanked, and the first one's
  specifier becomes :attr:`ModuleSource.import_error`: the runtime compiles the rest (a
  syntax error anywhere still wins, as in a module) and then fails the cell with
  ``Unsupported import in exec: <specifier>`` before anything runs, as the reference's
  module loader does;
* ``import(...)`` calls a runtime function ``$cmIm$`` that returns a promise rejected
  with the reference's string ``unsupported import in exec``, and ``import.meta`` reads
  ``$cmIM$.meta``, an empty object without prototype (what V8 gives a module when the
  host does not fill it in). Both names are the compiled function's parameters
  (:data:`HIDDEN_PARAMETERS`), present only in programs that use them.

The scan knows strings, template literals, comments and regular expression literals
(told from divisions by the token before them, the usual heuristic), so ``"import"``
in a string or ``x.export`` is left alone. Programs that contain neither word are
passed through untouched, at the cost of two substring searches.
"""

from __future__ import annotations

from typing import Final, NamedTuple

__all__ = ["HIDDEN_PARAMETERS", "ModuleSource", "module_source"]

DYNAMIC_IMPORT: Final = "$cmIm$"
IMPORT_META: Final = "$cmIM$"
#: The parameters of the function a rewritten program is compiled as, in order.
HIDDEN_PARAMETERS: Final = (DYNAMIC_IMPORT, IMPORT_META)

_LINE_BREAKS: Final = "\n\r\u2028\u2029"
_SPACE: Final = " \t\v\f\ufeff\u00a0" + _LINE_BREAKS
_PUNCT_BEFORE_EXPRESSION: Final = set("([{,;:=!&|?+-*%<>~^")
_KEYWORDS_BEFORE_EXPRESSION: Final = {
    "return", "typeof", "instanceof", "in", "of", "new", "delete", "void", "throw",
    "case", "do", "else", "yield", "await", "export", "default", "extends",
}  # fmt: skip
_ESCAPES: Final = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}


class ModuleSource(NamedTuple):
    """A program ready for the runtime."""

    body: str
    """The source to compile, every character at its original position."""
    import_error: str | None
    """``Unsupported import in exec: <specifier>`` for a program with a static import."""
    hidden_parameters: bool
    """Whether ``body`` uses :data:`HIDDEN_PARAMETERS`."""


def module_source(source: str) -> ModuleSource:
    """``source`` with its module syntax rewritten (see the module docstring)."""
    if "import" not in source and "export" not in source:
        return ModuleSource(source, None, False)
    return _Rewriter(source).run()


def _blank(text: str) -> str:
    """``text`` as spaces, line breaks kept, one space per UTF-16 unit (a column)."""
    return "".join(
        ch if ch in _LINE_BREAKS else " " * (2 if ord(ch) > 0xFFFF else 1) for ch in text
    )


def _is_identifier_part(ch: str) -> bool:
    return ch.isalnum() or ch in "_$\u200c\u200d" or (ord(ch) > 0x7F and ch.isidentifier())


class _Token(NamedTuple):
    kind: str  # "name", "string", "template", "number", "regex", "punct"
    start: int
    end: int
    value: str  # the name, the cooked string, or the punctuator
    level: int  # brackets (and template substitutions) open around it; 0: top level


class _Rewriter:
    def __init__(self, source: str) -> None:
        self.src = source
        self.out = list(source)
        self.import_error: str | None = None
        self.hidden = False
        self.tokens: list[_Token] = []
        self.level = 0  # ( [ { and ${ open at the scan's position
        self.substitutions: list[int] = []  # the level inside each open `${`

    # -- scanning ------------------------------------------------------------------

    def run(self) -> ModuleSource:
        self._tokenize()
        self._rewrite()
        return ModuleSource("".join(self.out), self.import_error, self.hidden)

    def _add(self, kind: str, start: int, end: int, value: str = "") -> None:
        self.tokens.append(_Token(kind, start, end, value, self.level))

    def _tokenize(self) -> None:
        src, n, i = self.src, len(self.src), 0
        while i < n:
            ch = src[i]
            if ch in _SPACE:
                i += 1
            elif src.startswith("//", i):
                i = self._line_end(i)
            elif src.startswith("/*", i):
                end = src.find("*/", i + 2)
                i = n if end < 0 else end + 2
            elif ch in "'\"":
                i = self._string(i)
            elif ch == "`":
                i = self._template(i)
            elif ch == "}" and self.substitutions and self.substitutions[-1] == self.level:
                self.substitutions.pop()
                self.level -= 1
                i = self._template(i)  # the template goes on after its `${ }`
            elif ch == "/" and self._regex_allowed():
                i = self._regex(i)
            elif _is_identifier_part(ch) and not ch.isdigit():
                j = i + 1
                while j < n and _is_identifier_part(src[j]):
                    j += 1
                self._add("name", i, j, src[i:j])
                i = j
            elif ch.isdigit() or (ch == "." and i + 1 < n and src[i + 1].isdigit()):
                j = i + 1
                while j < n and (_is_identifier_part(src[j]) or src[j] == "."):
                    j += 1
                self._add("number", i, j)
                i = j
            else:
                if ch in ")]}":
                    self.level -= 1
                length = 2 if src.startswith("?.", i) else 1
                self._add("punct", i, i + length, src[i : i + length])
                if ch in "([{":
                    self.level += 1
                i += length

    def _line_end(self, i: int) -> int:
        while i < len(self.src) and self.src[i] not in _LINE_BREAKS:
            i += 1
        return i

    def _string(self, i: int) -> int:
        src, quote, j, cooked = self.src, self.src[i], i + 1, []
        while j < len(src) and src[j] != quote and src[j] not in "\n\r":
            if src[j] == "\\" and j + 1 < len(src):
                j, char = self._escape(j + 1)
                cooked.append(char)
            else:
                cooked.append(src[j])
                j += 1
        end = min(j + 1, len(src))
        self._add("string", i, end, "".join(cooked))
        return end

    def _escape(self, j: int) -> tuple[int, str]:
        """The character of the escape whose letter is at ``j``, and where it ends."""
        src, letter = self.src, self.src[j]
        if letter == "x" and _hex(src[j + 1 : j + 3], 2):
            return j + 3, chr(int(src[j + 1 : j + 3], 16))
        if letter == "u" and src.startswith("{", j + 1):
            end = src.find("}", j)
            if end > 0 and _hex(src[j + 2 : end], 0) and int(src[j + 2 : end], 16) <= 0x10FFFF:
                return end + 1, chr(int(src[j + 2 : end], 16))
        if letter == "u" and _hex(src[j + 1 : j + 5], 4):
            return j + 5, chr(int(src[j + 1 : j + 5], 16))
        if letter == "\r" and src.startswith("\n", j + 1):
            return j + 2, ""
        if letter in _LINE_BREAKS:
            return j + 1, ""
        return j + 1, _ESCAPES.get(letter, letter)

    def _template(self, i: int) -> int:
        """Scan template text from the backtick or `}` at ``i`` to its end or its next
        `${` (which opens a substitution: one more level)."""
        src, j = self.src, i + 1
        while j < len(src):
            if src[j] == "\\":
                j += 2
            elif src[j] == "`":
                self._add("template", i, j + 1)
                return j + 1
            elif src.startswith("${", j):
                self._add("template", i, j + 2)
                self.level += 1
                self.substitutions.append(self.level)
                return j + 2
            else:
                j += 1
        self._add("template", i, len(src))
        return len(src)

    def _regex_allowed(self) -> bool:
        if not self.tokens:
            return True
        last = self.tokens[-1]
        if last.kind == "name":
            return last.value in _KEYWORDS_BEFORE_EXPRESSION
        if last.kind == "punct":
            return last.value in _PUNCT_BEFORE_EXPRESSION or last.value == "}"
        return False

    def _regex(self, i: int) -> int:
        src, j, in_class = self.src, i + 1, False
        while j < len(src) and src[j] not in _LINE_BREAKS:
            if src[j] == "\\":
                j += 1
            elif src[j] == "[":
                in_class = True
            elif src[j] == "]":
                in_class = False
            elif src[j] == "/" and not in_class:
                j += 1
                while j < len(src) and _is_identifier_part(src[j]):
                    j += 1
                break
            j += 1
        self._add("regex", i, j)
        return j

    # -- rewriting -----------------------------------------------------------------

    def _rewrite(self) -> None:
        tokens = self.tokens
        for index, token in enumerate(tokens):
            if token.kind != "name" or token.value not in ("import", "export"):
                continue
            before = tokens[index - 1] if index else None
            after = tokens[index + 1] if index + 1 < len(tokens) else None
            if before is not None and before.value in (".", "?."):
                continue  # a property: `x.import`
            if after is not None and after.value == ":":
                continue  # an object key: `{ import: 1 }`
            top_level = token.level == 0
            if token.value == "import":
                self._import(index, after, top_level)
            elif top_level:
                self._export(index, after)

    def _set(self, start: int, text: str) -> None:
        self.out[start : start + len(text)] = list(text)

    def _blank_range(self, start: int, end: int) -> None:
        # One list slot per source character (an astral one gets its two columns).
        self.out[start:end] = [_blank(ch) for ch in self.src[start:end]]

    def _import(self, index: int, after: _Token | None, top_level: bool) -> None:
        token = self.tokens[index]
        if after is not None and after.value == "(":
            follow = self.tokens[index + 2] if index + 2 < len(self.tokens) else None
            if follow is not None and follow.value != ")":
                self._set(token.start, DYNAMIC_IMPORT)
                self.hidden = True
        elif after is not None and after.value == ".":
            self._set(token.start, IMPORT_META)
            self.hidden = True
        elif top_level:
            self._static(index)

    def _static(self, index: int) -> None:
        """Blank the import (or re-export) statement at ``index`` up to its specifier
        and any ``with { ... }`` after it; note the first specifier."""
        tokens = self.tokens
        spec = index + 1
        while spec < len(tokens) and tokens[spec].kind != "string":
            if tokens[spec].value == ";":
                return  # not an import statement after all: leave it to V8
            spec += 1
        if spec >= len(tokens):
            return
        end = tokens[spec].end
        if spec + 2 < len(tokens) and tokens[spec + 1].value in ("with", "assert"):
            close = spec + 2
            while close < len(tokens) and tokens[close].value != "}":
                close += 1
            if close < len(tokens):
                end = tokens[close].end
        if self.import_error is None:
            self.import_error = f"Unsupported import in exec: {tokens[spec].value}"
        self._blank_range(tokens[index].start, end)

    def _export(self, index: int, after: _Token | None) -> None:
        tokens, token = self.tokens, self.tokens[index]
        if after is None:
            return
        if after.value in ("{", "*"):
            close = index + 1
            if after.value == "{":
                while close < len(tokens) and tokens[close].value != "}":
                    close += 1
            follow = tokens[close + 1] if close + 1 < len(tokens) else None
            if after.value == "*" or (follow is not None and follow.value == "from"):
                self._static(index)
            elif close < len(tokens):
                self._blank_range(token.start, tokens[close].end)
            return
        self._blank_range(token.start, token.end)
        if after.value != "default":
            return
        target = tokens[index + 2] if index + 2 < len(tokens) else None
        if target is not None and target.value == "async":
            target = tokens[index + 3] if index + 3 < len(tokens) else None
        if target is not None and target.value in ("function", "class"):
            name = index + (4 if tokens[index + 2].value == "async" else 3)
            if name < len(tokens) and tokens[name].value == "*":
                name += 1
            if name < len(tokens) and tokens[name].kind == "name":
                self._blank_range(after.start, after.end)  # a declaration: it keeps its name
                return
        self._set(after.start, "0,     ")  # `default` -> an expression statement


def _hex(digits: str, length: int) -> bool:
    """Whether ``digits`` are hex digits, exactly ``length`` of them (0: any number)."""
    if not digits or (length and len(digits) != length):
        return False
    return all(c in "0123456789abcdefABCDEF" for c in digits)
