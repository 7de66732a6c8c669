"""The hostile-program corpus: programs an adversarial (or just unlucky) model may write,
each with the outcome the runtime must produce.

Every entry runs in a fresh session (see ``test_corpus.py``) with the tools of
:class:`HostileDelegate`: ``echo`` (returns its input), ``block`` (never returns until
cancelled) and ``fail`` (raises ``RuntimeError("tool failed")``), all FUNCTION tools.

Expectations:

* :class:`Exactly` - the first event is exactly this ``Completed``;
* :class:`FailsWith` - the cell completes with an ``error_text`` equal to, or
  containing one of, the given texts;
* :class:`OutputMatches` - the cell completes with text items matching regexes;
* :class:`Endless` - the program never finishes on its own: observed with
  ``YieldAfter(0.05)`` it yields, and ``terminate`` ends it within ``within`` seconds.

``calls`` (when not ``None``) lists the ``(tool, input)`` pairs the delegate must have
received, in order: for the bridge and tool-input entries it is how "a forged or
rejected call never reaches the delegate" is asserted. Independently of ``calls``,
every call the delegate receives in any entry must be well-formed (fresh ids in order,
enabled tool, a JSON object as input).

Every entry runs in both isolation modes: none may abort the V8 process or exhaust the
host's memory (``test_memory_census.py`` tries each built-in that could).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

import attrs

from code_mode import (
    JSON,
    CellEvent,
    Completed,
    Image,
    ImageDetail,
    ObserveMode,
    Text,
    YieldAfter,
)

MiB: Final = 1024 * 1024
SMALL_HEAP: Final = {"memory_limit_bytes": 32 * MiB}

MEMORY_LIMIT: Final = (
    "exec cell exceeded its memory limit of 33554432 bytes (RuntimeConfig.memory_limit_bytes)"
)
BUFFER_LIMIT: Final = MEMORY_LIMIT + " in ArrayBuffer memory"
STACK_OVERFLOW: Final = "RangeError: Maximum call stack size exceeded"
TRUNCATED: Final = "\n[code mode error truncated]"


# -- expectations ----------------------------------------------------------------------


@attrs.frozen
class Exactly:
    event: Completed
    wait: float = 30.0

    def initial_mode(self) -> ObserveMode:
        return YieldAfter(self.wait)

    def check(self, event: CellEvent) -> None:
        assert event == self.event


@attrs.frozen
class FailsWith:
    """Completed with an error: ``exact`` (if given) or containing any of ``fragments``."""

    fragments: tuple[str, ...] = ()
    exact: str | None = None
    wait: float = 30.0

    def initial_mode(self) -> ObserveMode:
        return YieldAfter(self.wait)

    def check(self, event: CellEvent) -> None:
        assert isinstance(event, Completed), event
        assert event.error_text is not None, event
        if self.exact is not None:
            assert event.error_text == self.exact
        if self.fragments:
            assert any(fragment in event.error_text for fragment in self.fragments), (
                event.error_text[:2000]
            )


@attrs.frozen
class OutputMatches:
    """Completed with exactly one text item per pattern (``re.fullmatch``)."""

    patterns: tuple[str, ...]
    error_text: str | None = None
    wait: float = 30.0

    def initial_mode(self) -> ObserveMode:
        return YieldAfter(self.wait)

    def check(self, event: CellEvent) -> None:
        assert isinstance(event, Completed), event
        assert event.error_text == self.error_text
        texts = [item.text for item in event.content_items if isinstance(item, Text)]
        assert len(texts) == len(event.content_items) == len(self.patterns), event
        for pattern, text in zip(self.patterns, texts, strict=True):
            assert re.fullmatch(pattern, text, re.DOTALL), (pattern, text[:200])


@attrs.frozen
class Endless:
    """Runs until terminated; ``terminate`` returns within ``within`` seconds."""

    within: float = 1.0

    def initial_mode(self) -> ObserveMode:
        return YieldAfter(0.05)

    def check(self, event: CellEvent) -> None:
        raise AssertionError("Endless is checked by the runner")  # pragma: no cover


Expectation = Exactly | FailsWith | OutputMatches | Endless


@attrs.frozen
class HostileProgram:
    name: str
    source: str
    tools: tuple[str, ...]
    expect: Expectation
    config_overrides: Mapping[str, Any] = attrs.field(factory=dict)
    category: str = ""
    calls: tuple[tuple[str, JSON], ...] | None = None


def completed(*texts: str, error_text: str | None = None) -> Completed:
    return Completed([Text(text) for text in texts], error_text=error_text)


TOOLS: Final = ("echo", "block", "fail")

# A helper called at every depth on the way out of a stack overflow until it works
# once: the first attempts run out of stack inside the runtime's own code.
STACK_EDGE = """
let ok = 0, bad = 0, done = false;
function f(n) {
  try { return f(n + 1); } catch (e) {
    if (!done) { try { ATTEMPT; done = true; ok++; } catch { bad++; } }
    throw e;
  }
}
try { f(0); } catch {}
"""

DEEP_ARRAY_TEXT: Final = "[" * 100_000 + "1" + "]" * 100_000


def _deep(depth: int) -> str:
    """JS expression: an object whose ``v`` nests ``depth`` arrays (total depth + 1)."""
    return f"(() => {{ let v = 1; for (let i = 0; i < {depth}; i++) v = [v]; return {{ v }}; }})()"


def _program(
    category: str,
    name: str,
    source: str,
    expect: Expectation,
    **options: Any,
) -> HostileProgram:
    return HostileProgram(
        name=f"{category}-{name}",
        source=source,
        tools=options.pop("tools", TOOLS),
        expect=expect,
        category=category,
        **options,
    )


# -- the corpus ------------------------------------------------------------------------

MEMORY: Final = [
    _program(
        "memory",
        "many-small-objects",
        "const a = []; for (;;) a.push({ n: a.length, s: 'item' + a.length });",
        FailsWith(exact=MEMORY_LIMIT),
        config_overrides=SMALL_HEAP,
    ),
    _program(
        "memory",
        "one-huge-array",
        "const a = new Array(2 ** 25).fill(1.5); text(a.length);",
        FailsWith(exact=MEMORY_LIMIT),
        config_overrides=SMALL_HEAP,
    ),
    _program(
        "memory",
        "huge-sparse-array-fill",
        # V8 would abort its process ("invalid table size"): refused before the call.
        "new Array(2 ** 30).fill(0);",
        FailsWith(exact=MEMORY_LIMIT),
        config_overrides=SMALL_HEAP,
    ),
    _program(
        "memory",
        "huge-string-split",
        # V8 would abort its process at once ("invalid size error"): refused first.
        "'a'.repeat(2 ** 24).split('');",
        FailsWith(exact=MEMORY_LIMIT),
        config_overrides=SMALL_HEAP,
    ),
    _program(
        "memory",
        "string-doubling",
        "let s = 'x'; for (;;) s += s;",
        FailsWith(("RangeError: Invalid string length",)),
        config_overrides=SMALL_HEAP,
    ),
    _program(
        "memory",
        "many-strings",
        "const parts = []; for (;;) parts.push('abcdefgh'.repeat(1000) + parts.length);",
        FailsWith(exact=MEMORY_LIMIT),
        config_overrides=SMALL_HEAP,
    ),
    _program(
        "memory",
        "huge-joined-string",
        "const s = Array(2 ** 24).fill('x').join(''); text(s.length);",
        FailsWith(exact=MEMORY_LIMIT),
        config_overrides=SMALL_HEAP,
    ),
    _program(
        "memory",
        "huge-typed-array",
        # 2 GiB: refused before V8 tries to allocate it.
        "const a = new Float64Array(2 ** 28); text(a.length);",
        FailsWith(exact=BUFFER_LIMIT),
        config_overrides=SMALL_HEAP,
    ),
    _program(
        "memory",
        "typed-arrays-touched",
        # ArrayBuffer backing stores live outside the V8 heap: they are counted on their
        # own against the same limit (js/buffers.js), so 512 MiB of them fail at 32 MiB.
        "const a = []; for (let i = 0; i < 512; i++) a.push(new Uint8Array(MiB).fill(1));"
        " text(a.length);".replace("MiB", str(MiB)),
        FailsWith(exact=BUFFER_LIMIT),
        config_overrides=SMALL_HEAP,
    ),
    _program(
        "memory",
        "map-growth",
        "const m = new Map(); for (let i = 0; ; i++) m.set(i, 'v' + i);",
        FailsWith(exact=MEMORY_LIMIT),
        config_overrides=SMALL_HEAP,
    ),
    _program(
        "memory",
        "set-growth",
        "const s = new Set(); for (let i = 0; ; i++) s.add('k' + i);",
        FailsWith(exact=MEMORY_LIMIT),
        config_overrides=SMALL_HEAP,
    ),
    _program(
        "memory",
        "object-keys-growth",
        "const o = {}; for (let i = 0; ; i++) o['k' + i] = i;",
        FailsWith(exact=MEMORY_LIMIT),
        config_overrides=SMALL_HEAP,
    ),
    _program(
        "memory",
        "endless-async-recursion",
        "async function f() { await null; return f(); } await f();",
        FailsWith(exact=MEMORY_LIMIT),
        config_overrides=SMALL_HEAP,
    ),
    _program(
        "memory",
        "closure-chain",
        "let f = () => 0; for (;;) { const g = f; f = () => g() + 1; }",
        FailsWith(exact=MEMORY_LIMIT),
        config_overrides=SMALL_HEAP,
    ),
]


def _buffers(name: str, source: str, expect: Expectation | None = None) -> HostileProgram:
    """A way around the ArrayBuffer accounting: each must fail at the 32 MiB limit.
    Loops are bounded (about 64 MiB in all), so a gap fails the test, not the host."""
    return _program(
        "memory",
        f"buffers-{name}",
        source.replace("MiB", str(MiB)),
        expect if expect is not None else FailsWith(exact=BUFFER_LIMIT),
        config_overrides=SMALL_HEAP,
    )


# Typed arrays of 8 MiB to copy, and a `slice` that the species cannot reach.
BIG_VIEW = "const big = new Uint8Array(8 * MiB).fill(1); const keep = [];"
TYPED_ARRAY_PROTOTYPE = "Object.getPrototypeOf(Uint8Array.prototype)"

BUFFERS: Final = [
    _buffers(
        "array-buffer",
        "const a = []; for (let i = 0; i < 64; i++) a.push(new ArrayBuffer(MiB)); text(a.length);",
    ),
    _buffers(
        "array-buffer-valueof-length",
        # The length is read once: a valueOf that answers differently the second time
        # changes nothing.
        "let n = 0; const length = { valueOf() { return n++ === 0 ? 64 * MiB : 1; } };"
        " const b = new ArrayBuffer(length); text(b.byteLength);",
    ),
    _buffers(
        "resizable-reservation",
        # V8 reserves maxByteLength up front: that is what counts.
        "const b = new ArrayBuffer(0, { maxByteLength: 64 * MiB }); text(b.maxByteLength);",
    ),
    _buffers(
        "resizable-resized",
        "const a = []; for (let i = 0; i < 8; i++) {"
        " const b = new ArrayBuffer(0, { maxByteLength: 8 * MiB }); b.resize(8 * MiB);"
        " new Uint8Array(b).fill(1); a.push(b); } text(a.length);",
    ),
    _buffers(
        "array-buffer-slice",
        "const b = new ArrayBuffer(8 * MiB); const a = [];"
        " for (let i = 0; i < 8; i++) a.push(b.slice()); text(a.length);",
    ),
    _buffers(
        "array-buffer-slice-without-species",
        # `constructor` undefined: the original ArrayBuffer makes the copy.
        "const b = new ArrayBuffer(8 * MiB); b.constructor = undefined; const a = [];"
        " for (let i = 0; i < 8; i++) a.push(b.slice()); text(a.length);",
    ),
    _buffers(
        "array-buffer-slice-null-prototype",
        "const slice = ArrayBuffer.prototype.slice; const b = new ArrayBuffer(8 * MiB);"
        " Object.setPrototypeOf(b, null); const a = [];"
        " for (let i = 0; i < 8; i++) a.push(slice.call(b)); text(a.length);",
    ),
    _buffers(
        "array-buffer-transfer",
        "const a = []; for (let i = 0; i < 64; i++) a.push(new ArrayBuffer(16).transfer(MiB));"
        " text(a.length);",
    ),
    _buffers(
        "array-buffer-transfer-to-fixed-length",
        "const a = []; for (let i = 0; i < 64; i++)"
        " a.push(new ArrayBuffer(16).transferToFixedLength(MiB)); text(a.length);",
    ),
    _buffers(
        "typed-array-length",
        "const a = []; for (let i = 0; i < 64; i++) a.push(new Float64Array(MiB / 8));"
        " text(a.length);",
    ),
    _buffers(
        "float16-array",
        "const a = []; for (let i = 0; i < 64; i++) a.push(new Float16Array(MiB / 2));"
        " text(a.length);",
    ),
    _buffers(
        "typed-array-from-array",
        "const source = new Array(MiB / 8).fill(1.5); const a = [];"
        " for (let i = 0; i < 64; i++) a.push(new Float64Array(source)); text(a.length);",
    ),
    _buffers(
        "typed-array-from-iterable",
        "function* values() { for (let i = 0; i < MiB / 8; i++) yield i; } const a = [];"
        " for (let i = 0; i < 64; i++) a.push(new Float64Array(values())); text(a.length);",
    ),
    _buffers(
        "typed-array-from-array-like",
        "const a = []; for (let i = 0; i < 64; i++) a.push(new Float64Array({ length: MiB / 8 }));"
        " text(a.length);",
    ),
    _buffers(
        "typed-array-copy",
        "const source = new Uint8Array(MiB / 8); const a = [];"
        " for (let i = 0; i < 64; i++) a.push(new Float64Array(source)); text(a.length);",
    ),
    _buffers(
        "typed-array-static-from",
        "const a = []; for (let i = 0; i < 64; i++) a.push(Float64Array.from({ length: MiB / 8 }));"
        " text(a.length);",
    ),
    _buffers(
        "typed-array-static-of",
        "const items = new Array(MiB / 16).fill(1); const a = [];"
        " for (let i = 0; i < 128; i++) a.push(Float64Array.of(...items)); text(a.length);",
    ),
    _buffers(
        "typed-array-slice",
        BIG_VIEW + " for (let i = 0; i < 8; i++) keep.push(big.slice()); text(keep.length);",
    ),
    _buffers(
        "typed-array-slice-without-species",
        BIG_VIEW + " big.constructor = { [Symbol.species]: undefined };"
        " for (let i = 0; i < 8; i++) keep.push(big.slice()); text(keep.length);",
    ),
    _buffers(
        "typed-array-map-without-species",
        BIG_VIEW + " big.constructor = undefined;"
        " for (let i = 0; i < 8; i++) keep.push(big.map((x) => x)); text(keep.length);",
    ),
    _buffers(
        "typed-array-filter-null-prototype",
        f"const filter = {TYPED_ARRAY_PROTOTYPE}.filter;"
        " const big = new Float64Array(MiB / 8).fill(1); Object.setPrototypeOf(big, null);"
        " const keep = []; for (let i = 0; i < 64; i++) keep.push(filter.call(big, () => true));"
        " text(keep.length);",
    ),
    _buffers(
        "typed-array-species-getter",
        # A getter that shows the species to the check and hides it from the copy.
        BIG_VIEW + " let n = 0; Object.defineProperty(big, 'constructor',"
        " { get() { return n++ % 2 ? undefined : Uint8Array; } });"
        " for (let i = 0; i < 8; i++) keep.push(big.slice()); text(keep.length);",
    ),
    _buffers(
        "typed-array-to-reversed",
        BIG_VIEW + " for (let i = 0; i < 8; i++) keep.push(big.toReversed()); text(keep.length);",
    ),
    _buffers(
        "typed-array-to-sorted",
        BIG_VIEW + " for (let i = 0; i < 8; i++) keep.push(big.toSorted()); text(keep.length);",
    ),
    _buffers(
        "typed-array-with",
        BIG_VIEW + " for (let i = 0; i < 8; i++) keep.push(big.with(0, 2)); text(keep.length);",
    ),
    _buffers(
        "uint8-array-from-base64",
        "const text64 = 'AAAA'.repeat(MiB / 4); const a = [];"
        " for (let i = 0; i < 48; i++) a.push(Uint8Array.fromBase64(text64)); text(a.length);",
    ),
    _buffers(
        "uint8-array-from-hex",
        "const hex = '00'.repeat(MiB); const a = [];"
        " for (let i = 0; i < 48; i++) a.push(Uint8Array.fromHex(hex)); text(a.length);",
    ),
    _buffers(
        "constructor-of-an-instance",
        "const C = new Uint8Array(8).constructor; const a = [];"
        " for (let i = 0; i < 64; i++) a.push(new C(MiB)); text(a.length);",
    ),
    _buffers(
        "constructor-of-a-buffer",
        "const C = new Uint8Array(8).buffer.constructor; const a = [];"
        " for (let i = 0; i < 64; i++) a.push(new C(MiB)); text(a.length);",
    ),
    _buffers(
        "constructor-from-the-prototype-chain",
        "const C = Object.getPrototypeOf(new Float64Array(100)).constructor;"
        " const S = C[Symbol.species]; const a = [];"
        " for (let i = 0; i < 64; i++) a.push(new S(MiB / 8)); text(a.length);",
    ),
    _buffers(
        "class-extends",
        "class Big extends Uint8Array { constructor() { super(MiB); } } const a = [];"
        " for (let i = 0; i < 64; i++) a.push(new Big()); text(a.length);",
    ),
    _buffers(
        "reflect-construct-new-target",
        "const a = []; for (let i = 0; i < 64; i++)"
        " a.push(Reflect.construct(Uint8Array, [MiB], function () {})); text(a.length);",
    ),
    _buffers(
        "bound-constructor",
        "const B = Uint8Array.bind(null, MiB); const a = [];"
        " for (let i = 0; i < 64; i++) a.push(new B()); text(a.length);",
    ),
    _buffers(
        "overwritten-globals-and-methods",
        f"const Int8 = Int8Array; const proto = {TYPED_ARRAY_PROTOTYPE};"
        " for (const k of Object.getOwnPropertyNames(proto)) try { proto[k] = null; } catch {}"
        " for (const k of ['slice', 'transfer', 'constructor']) ArrayBuffer.prototype[k] = null;"
        " Uint8Array.prototype.constructor = null; globalThis.Uint8Array = null;"
        " globalThis.ArrayBuffer = null; Function.prototype.bind = null;"
        " const a = []; for (let i = 0; i < 64; i++) a.push(new Int8(MiB)); text(a.length);",
    ),
    _buffers(
        "replaced-accessors-before-first-use",
        # The accounting is compiled on first use: what it reads with must have been
        # captured before the program ran.
        f"const ta = {TYPED_ARRAY_PROTOTYPE};"
        " for (const k of ['length', 'byteLength', 'byteOffset', 'buffer'])"
        " Object.defineProperty(ta, k, { get() { return 0; } });"
        " for (const k of ['byteLength', 'maxByteLength', 'resizable', 'detached'])"
        " Object.defineProperty(ArrayBuffer.prototype, k, { get() { return 0; } });"
        " Object.defineProperty(ta, Symbol.toStringTag, { get() { return undefined; } });"
        " const source = new Uint8Array(MiB / 8); const a = [];"
        " for (let i = 0; i < 64; i++) a.push(new Float64Array(source)); text(a.length);",
    ),
    _buffers(
        "replaced-globals-before-first-use",
        "Function.prototype.call = Function.prototype.apply = Function.prototype.bind ="
        " Function.prototype.toString = null;"
        " for (const k of ['Math', 'Reflect', 'Object', 'WeakRef', 'Symbol', 'Array', 'TypeError',"
        " 'RangeError', 'String', 'Function', 'Set', 'Map', 'WeakMap', 'FinalizationRegistry',"
        " 'Proxy', 'JSON']) globalThis[k] = undefined;"
        " const a = []; for (let i = 0; i < 16; i++) a.push(new Float64Array(MiB / 8).slice(),"
        " new Float64Array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]).map((x) => x), new ArrayBuffer(MiB),"
        " new Float64Array({ length: MiB / 8 }));"
        " text(a.length);",
    ),
    _buffers(
        "polluted-object-prototype",
        # Traps and descriptor fields read through the prototype chain would hand the
        # program the original constructors.
        "let leaked = 0; for (const k of ['get', 'set', 'apply', 'construct', 'value'])"
        " Object.defineProperty(Object.prototype, k, { get() { leaked++; return undefined; },"
        " configurable: true });"
        " const a = []; for (let i = 0; i < 64; i++) a.push(new Uint8Array(MiB).slice());"
        " text(a.length);",
    ),
    _buffers(
        "caught-and-ignored",
        # The RangeError can be caught, but the cell has ended: nothing after it counts.
        "text('before'); const a = []; for (let i = 0; i < 64; i++) {"
        " try { a.push(new Uint8Array(MiB)); } catch { text('caught'); } }"
        " text('after'); store('k', 1);",
        Exactly(completed("before", error_text=BUFFER_LIMIT)),
    ),
]

RECURSION: Final = [
    _program(
        "recursion",
        "plain",
        "function f(n) { return f(n + 1) + 1; } f(0);",
        FailsWith((STACK_OVERFLOW,)),
    ),
    _program(
        "recursion",
        "proxy-get-trap",
        "const p = new Proxy({}, { get(t, k, r) { return r[k]; } }); p.x;",
        FailsWith((STACK_OVERFLOW,)),
    ),
    _program(
        "recursion",
        "toString",
        "const o = {}; o.toString = () => String(o); text(String(o));",
        FailsWith((STACK_OVERFLOW,)),
    ),
    _program(
        "recursion",
        "tool-call-at-stack-edge",
        STACK_EDGE.replace("ATTEMPT", "tools.echo({ n }).catch(() => {})")
        + "text(ok + ' ' + bad); text(JSON.stringify(await tools.echo({ last: 1 })));",
        OutputMatches((r"1 \d+", r'\{"last":1\}')),
    ),
    _program(
        "recursion",
        "exit-at-stack-edge",
        STACK_EDGE.replace("ATTEMPT", "exit()") + "text('after exit');",
        Exactly(completed()),
        calls=(),
    ),
    _program(
        "recursion",
        "text-at-stack-edge",
        STACK_EDGE.replace("ATTEMPT", "text('t' + n)") + "text(ok + ' ' + bad);",
        OutputMatches((r"t\d+", r"1 \d+")),
    ),
    _program(
        "recursion",
        "store-and-notify-at-stack-edge",
        STACK_EDGE.replace("ATTEMPT", "store('k', n); notify('n' + n)")
        + "text(ok + ' ' + typeof load('k'));",
        OutputMatches((r"1 number",)),
    ),
]

REGEX: Final = [
    _program("regex", "nested-quantifier", "/(a+)+b/.test('a'.repeat(40));", Endless()),
    _program(
        "regex",
        "word-groups",
        "/^(\\w+\\s?)*$/.test('an input that never matches because of the bang!'.repeat(3));",
        Endless(),
    ),
    _program("regex", "overlapping-runs", "/(x+x+)+y/.test('x'.repeat(50));", Endless()),
]

LOOPS: Final = [
    _program("loop", "while-true", "while (true) {}", Endless()),
    _program(
        "loop",
        "arithmetic",
        "let i = 0; for (;;) { i = (i * 31 + 7) % 1000003; }",
        Endless(),
    ),
    _program("loop", "after-output", "text('before'); for (;;) {}", Endless()),
    _program(
        "loop",
        "microtask-chain",
        "function m() { Promise.resolve().then(m); } m(); await new Promise(() => {});",
        Endless(),
    ),
    _program(
        "loop",
        "async-spin",
        "async function spin() { for (;;) await null; } spin(); await new Promise(() => {});",
        Endless(),
    ),
    _program(
        "loop",
        "in-timer-callback",
        "setTimeout(() => { for (;;) {} }, 0); await new Promise(() => {});",
        Endless(),
    ),
    _program(
        "loop",
        "in-prepareStackTrace",
        "Error.prepareStackTrace = () => { for (;;) {} }; throw new Error('x');",
        Endless(),
    ),
    _program("loop", "in-toJSON", "text({ toJSON() { for (;;) {} } });", Endless()),
    _program("loop", "after-exit", "exit(); for (;;) {}", Exactly(completed())),
    _program(
        "loop",
        "uninterruptible-builtin",
        # A C++ builtin that never checks for interrupts: terminate() still returns
        # at once (the isolate is abandoned), the session carries on.
        "new Array(2 ** 25).sort();",
        Endless(),
    ),
]

TIMERS: Final = [
    _program(
        "timers",
        "pending-storm",
        "for (;;) setTimeout(() => {}, 100000);",
        FailsWith(
            exact="code mode cell exceeded its limit of 1024 pending timers "
            "(RuntimeConfig.max_pending_timers)"
        ),
    ),
    _program(
        "timers",
        "endless-rescheduling",
        "function t() { setTimeout(t, 0); } t(); await new Promise(() => {});",
        Endless(),
    ),
    _program(
        "timers",
        "thousand-zero-delay",
        "let n = 0; for (let i = 0; i < 1000; i++) setTimeout(() => { n++; }, 0);"
        " await new Promise((r) => setTimeout(r, 1)); text(n);",
        Exactly(completed("1000")),
    ),
    _program(
        "timers",
        "set-and-clear-storm",
        "for (let i = 0; i < 10000; i++) clearTimeout(setTimeout(() => {}, 1000)); text('ok');",
        Exactly(completed("ok")),
    ),
]

TOOL_STORMS: Final = [
    _program(
        "tool-storm",
        "blocking",
        "for (;;) tools.block();",
        FailsWith(
            exact="exec cell exceeded its limit of 128 outstanding tool calls "
            "(RuntimeConfig.max_outstanding_tool_calls)"
        ),
        calls=tuple(("block", {}) for _ in range(128)),
    ),
    _program(
        "tool-storm",
        "hundred-in-parallel",
        "const ps = []; for (let i = 0; i < 100; i++) ps.push(tools.echo({ i }));"
        " const r = await Promise.all(ps); text(r.length + ' ' + r[99].i);",
        Exactly(completed("100 99")),
        calls=tuple(("echo", {"i": i}) for i in range(100)),
    ),
    _program(
        "tool-storm",
        "unawaited-then-done",
        "for (let i = 0; i < 100; i++) tools.block(); text('done');",
        Exactly(completed("done")),
    ),
    _program(
        "tool-storm",
        "failures",
        "const r = await Promise.allSettled(Array.from({ length: 50 }, () => tools.fail({})));"
        " text(r.filter((x) => x.status === 'rejected' && x.reason === 'tool failed')"
        ".length);",
        Exactly(completed("50")),
    ),
]

OUTPUT: Final = [
    _program("output", "endless-flood", "for (;;) text('flood');", Endless()),
    _program(
        "output",
        "flood-past-limit",
        "for (;;) text('x'.repeat(1000));",
        FailsWith(
            exact="exec cell exceeded its limit of 1048576 buffered output bytes "
            "(RuntimeConfig.max_output_bytes)"
        ),
        config_overrides={"max_output_bytes": MiB},
    ),
    _program(
        "output",
        "image-flood-past-limit",
        "for (;;) image('data:image/png;base64,' + 'A'.repeat(10000));",
        FailsWith(
            exact="exec cell exceeded its limit of 1048576 buffered output bytes "
            "(RuntimeConfig.max_output_bytes)"
        ),
        config_overrides={"max_output_bytes": MiB},
    ),
    _program(
        "output",
        "one-huge-text",
        "text('x'.repeat(20 * 1024 * 1024));",
        FailsWith(
            exact="exec cell sent a message larger than the limit of 16777216 characters "
            "(RuntimeConfig.max_message_chars)"
        ),
    ),
    _program(
        "output",
        "many-big-texts",
        # 300 texts of 100 kB: every one is far below the message limit, so batching
        # them must not add up to a "message" above it.
        "for (let i = 0; i < 300; i++) text('x'.repeat(100000)); text('done');",
        OutputMatches(tuple(["x{100000}"] * 300 + ["done"])),
    ),
    _program(
        "output",
        "notification-flood",
        "for (let i = 0; i < 5000; i++) notify('n' + i); text('done');",
        Exactly(completed("done")),
    ),
]

PROMISES: Final = [
    _program("promise", "never-settles", "await new Promise(() => {});", Endless()),
    _program("promise", "awaits-blocked-tool", "await tools.block();", Endless()),
    _program(
        "promise",
        "dangling-work-is-dropped",
        "new Promise(() => {}); tools.block(); setTimeout(() => text('late'), 60000);"
        " text('done');",
        Exactly(completed("done")),
    ),
]

TOOL_INPUTS: Final = [
    _program(
        "tool-input",
        "proxy-throws",
        "await tools.echo(new Proxy({}, { get() { throw new Error('trap'); },"
        " ownKeys() { throw new Error('keys trap'); } }));",
        FailsWith(("Error: trap", "Error: keys trap")),
        calls=(),
    ),
    _program(
        "tool-input",
        "getter-throws",
        "await tools.echo({ get x() { throw new Error('getter boom'); } });",
        FailsWith(("Error: getter boom",)),
        calls=(),
    ),
    _program(
        "tool-input",
        "toJSON-throws",
        "await tools.echo({ toJSON() { throw new Error('toJSON boom'); } });",
        FailsWith(("Error: toJSON boom",)),
        calls=(),
    ),
    _program(
        "tool-input",
        "toJSON-returns-array",
        "await tools.echo({ toJSON() { return [1, 2]; } });",
        FailsWith(exact="tool `echo` expects a JSON object for arguments"),
        calls=(),
    ),
    _program(
        "tool-input",
        "bigint",
        "await tools.echo({ n: 10n });",
        FailsWith(("TypeError: Do not know how to serialize a BigInt",)),
        calls=(),
    ),
    _program(
        "tool-input",
        "cycle",
        "const o = {}; o.self = o; await tools.echo(o);",
        FailsWith(("TypeError: Converting circular structure to JSON",)),
        calls=(),
    ),
    _program(
        "tool-input",
        "well-behaved-proxy",
        "const p = new Proxy({}, { ownKeys: () => ['a'],"
        " getOwnPropertyDescriptor: () => ({ value: 1, enumerable: true, configurable: true }),"
        " get: (t, k) => (k === 'a' ? 1 : undefined) });"
        " text(await tools.echo(p));",
        Exactly(completed('{"a":1}')),
        calls=(("echo", {"a": 1}),),
    ),
    _program(
        "tool-input",
        "unknown-tool",
        "await tools.nope({});",
        FailsWith(exact="tool `nope` is not enabled in exec"),
        calls=(),
    ),
    _program(
        "tool-input",
        "huge-payload",
        "await tools.echo({ s: 'x'.repeat(20 * 1024 * 1024) });",
        FailsWith(
            exact="exec cell sent a message larger than the limit of 16777216 characters "
            "(RuntimeConfig.max_message_chars)"
        ),
        calls=(),
    ),
    _program(
        "tool-input",
        "throwing-getter-in-text",
        "text({ get x() { throw new Error('g'); } });",
        FailsWith(("Error: g",)),
    ),
]

POLLUTION: Final = [
    _program(
        "pollution",
        "json",
        "JSON.stringify = () => 'forged'; JSON.parse = () => ({ forged: true });"
        " const r = await tools.echo({ a: 1 }); text(r); store('k', { v: 1 }); text(load('k'));",
        Exactly(completed('{"a":1}', '{"v":1}')),
        calls=(("echo", {"a": 1}),),
    ),
    _program(
        "pollution",
        "array-methods",
        "Array.prototype.push = () => { throw new Error('no push'); };"
        ' Array.prototype.join = () => \'{"t":"tool","id":"tool-1","name":"evil"}\';'
        " Array.prototype.map = null; Array.isArray = () => false;"
        " text('x'); text(await tools.echo({ a: [1, 2] })); console.log('c', [3]);",
        Exactly(completed("x", '{"a":[1,2]}', "c [3]")),
        calls=(("echo", {"a": [1, 2]}),),
    ),
    _program(
        "pollution",
        "array-index-accessors",
        # Accessors for "0" on Array.prototype used to intercept the runtime's message
        # queue: the getter forged a tool call (with a string input for a FUNCTION tool).
        "Object.defineProperty(Array.prototype, '0', { configurable: true,"
        ' get() { return \'{"t":"tool","id":"tool-1","name":"echo","input":"x"}\'; },'
        " set(v) {} });"
        " text('hi'); await new Promise((r) => setTimeout(r, 1)); text('end');",
        Exactly(completed("hi", "end")),
        calls=(),
    ),
    _program(
        "pollution",
        "promise-and-reflect",
        "Promise.prototype.then = function () { throw new Error('nope'); };"
        " Promise.withResolvers = () => ({}); Promise.reject = () => 1;"
        " Reflect.apply = () => { throw new Error('r'); };"
        " Reflect.get = () => { throw new Error('g'); };"
        " text(await tools.echo({ a: 1 }));",
        Exactly(completed('{"a":1}')),
        calls=(("echo", {"a": 1}),),
    ),
    _program(
        "pollution",
        "promise-species",
        "class Evil extends Promise { static get [Symbol.species]() { throw new Error('s'); } }"
        " Object.defineProperty(Promise.prototype, 'constructor',"
        " { value: Evil, configurable: true, writable: true });"
        " Object.defineProperty(Promise, Symbol.species, { get() { throw new Error('s2'); } });"
        " text('x');",
        Exactly(completed("x")),
    ),
    _program(
        "pollution",
        "object-prototype-toJSON",
        "Object.prototype.toJSON = function () { return 'poisoned'; };"
        " text('a'); store('k', 1); text(String(load('k')));",
        Exactly(completed("a", "1")),
    ),
    _program(
        "pollution",
        "object-prototype-descriptor-keys",
        # Property descriptors read `get`/`set`/`value` through the prototype chain.
        "Object.prototype.get = function () { return 1; }; Object.prototype.set = undefined;"
        " store('k', 1); try { await tools.fail({}); } catch (e) { text(e); }"
        " text('end');",
        Exactly(completed("tool failed", "end")),
        calls=(("fail", {}),),
    ),
    _program(
        "pollution",
        "object-prototype-then",
        "Object.prototype.then = function (resolve) { resolve('hijacked'); };"
        " const v = await tools.echo({ a: 1 }); delete Object.prototype.then; text(v);",
        # A program may confuse itself; the host saw one well-formed call.
        Exactly(completed("hijacked")),
        calls=(("echo", {"a": 1}),),
    ),
    _program(
        "pollution",
        "function-prototype",
        "Function.prototype.call = () => 1; Function.prototype.apply = () => 1;"
        " Function.prototype.bind = () => 1;"
        " text(await tools.echo({ a: 1 })); setTimeout(() => text('timer'), 0);"
        " await new Promise((r) => setTimeout(r, 1));",
        Exactly(completed('{"a":1}', "timer")),
    ),
    _program(
        "pollution",
        "string-prototype",
        "for (const k of ['charCodeAt', 'slice', 'startsWith', 'toWellFormed', 'trim',"
        " 'toLowerCase', 'indexOf', 'split', 'replace']) String.prototype[k] = () => 'P';"
        " text('hello'); notify('note'); image('data:image/png;base64,AAAA');"
        " text(await tools.echo({ s: 'x' }));",
        Exactly(
            Completed(
                [
                    Text("hello"),
                    Image("data:image/png;base64,AAAA", ImageDetail.HIGH),
                    Text('{"s":"x"}'),
                ]
            )
        ),
        calls=(("echo", {"s": "x"}),),
    ),
    _program(
        "pollution",
        "map-prototype",
        "for (const k of ['get', 'set', 'has', 'delete', 'forEach'])"
        " Map.prototype[k] = () => { throw new Error('map ' + k); };"
        " store('k', 2); text(load('k')); const id = setTimeout(() => text('no'), 5);"
        " clearTimeout(id); text(await tools.echo({ a: 1 }));",
        Exactly(completed("2", '{"a":1}')),
    ),
    _program(
        "pollution",
        "frozen-prototypes",
        "for (const o of [Object.prototype, Array.prototype, Promise.prototype, Promise,"
        " Function.prototype, String.prototype, JSON, Reflect, Map.prototype])"
        " Object.freeze(o); store('k', [1]); text(load('k'));"
        " text(await tools.echo({ a: 1 }));",
        Exactly(completed("[1]", '{"a":1}')),
    ),
    _program(
        "pollution",
        "error-prepareStackTrace",
        "Error.prepareStackTrace = () => 'forged stack'; throw new Error('x');",
        # The program's own error text is the program's business.
        Exactly(completed(error_text="forged stack")),
    ),
    _program(
        "pollution",
        "overwritten-tools-global",
        "globalThis.tools = { echo: async () => 'fake' }; text(await tools.echo({}));",
        Exactly(completed("fake")),
        calls=(),
    ),
]

BRIDGE: Final = [
    _program(
        "bridge",
        "entry-point-unreachable",
        # The host calls the runtime through a function handle no global leads to: a
        # global of that name is the program's own and the host never calls it.
        "text(typeof __code_mode_recv);"
        " globalThis.__code_mode_recv = () => { throw new Error('called'); };"
        " text(await tools.echo({ a: 1 }));",
        Exactly(completed("undefined", '{"a":1}')),
        calls=(("echo", {"a": 1}),),
    ),
    _program(
        "bridge",
        "doorbells-are-hidden",
        # V8's gc extension takes the place of `Atomics` (see V8_FLAGS in _native_library.py),
        # which the runtime takes and deletes: no global of the runtime is left.
        "text(Object.getOwnPropertyNames(globalThis).filter((n) => n.startsWith('__')).join());"
        " text(typeof __cm_bell_more + ' ' + typeof __cm_bell_end + ' ' + typeof Atomics);",
        Exactly(completed("", "undefined undefined undefined")),
    ),
]

DEEP_JSON: Final = [
    _program(
        "deep-json",
        "tool-input-just-too-deep",
        f"await tools.echo({_deep(128)});",
        FailsWith(
            exact="exec runtime sent an invalid message: tool `echo` input nests deeper than "
            "the limit of 128 (RuntimeConfig.max_json_depth)"
        ),
        calls=(),
    ),
    _program(
        "deep-json",
        "tool-input-at-the-limit",
        f"const r = await tools.echo({_deep(127)}); text(JSON.stringify(r).length);",
        Exactly(completed(str(len('{"v":') + 127 * 2 + 2))),
    ),
    _program(
        "deep-json",
        "tool-input-very-deep",
        f"await tools.echo({_deep(100_000)});",
        FailsWith(
            exact="exec runtime sent an invalid message: a message nests deeper than the limit "
            "of 128 (RuntimeConfig.max_json_depth)"
        ),
        calls=(),
    ),
    _program(
        "deep-json",
        "stored-value-very-deep",
        f"store('k', {_deep(100_000)});",
        FailsWith(
            exact='Unable to store "k": it nests deeper than the limit of 128 '
            "(RuntimeConfig.max_json_depth)"
        ),
    ),
    _program(
        "deep-json",
        "deep-text-is-fine",
        "let v = 1; for (let i = 0; i < 100000; i++) v = [v]; text(v);",
        Exactly(completed(DEEP_ARRAY_TEXT)),
    ),
]

ERRORS: Final = [
    _program(
        "error",
        "huge-message",
        "throw new Error('x'.repeat(100000));",
        FailsWith(exact="Error: " + "x" * (16 * 1024 - len("Error: ")) + TRUNCATED),
    ),
    _program(
        "error",
        "throws-throwing-proxy",
        "throw new Proxy({}, { get() { throw new Error('trap'); } });",
        FailsWith(),
    ),
    _program("error", "throws-symbol", "throw Symbol('s');", FailsWith(exact="Symbol(s)")),
]

CORPUS: Final[list[HostileProgram]] = [
    *MEMORY,
    *BUFFERS,
    *RECURSION,
    *REGEX,
    *LOOPS,
    *TIMERS,
    *TOOL_STORMS,
    *OUTPUT,
    *PROMISES,
    *TOOL_INPUTS,
    *POLLUTION,
    *BRIDGE,
    *DEEP_JSON,
    *ERRORS,
]

assert len({program.name for program in CORPUS}) == len(CORPUS), "duplicate corpus names"
