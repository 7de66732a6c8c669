"""What a program sees of the built-ins the runtime reads once (``js/lengths.js``,
``js/patterns.js``, ``js/estimates.js``, ``js/allocations_impl.js``): the language's
own results, holes, subclasses and `$` patterns included.

The hostile side of the same wrappers (a length, a flag or a string V8 would read again)
is the census, ``tests/hostile/test_root_census.py``; here each program compares the
wrapped built-in with what the language defines, or two of its paths with each other.
"""

from __future__ import annotations

import trio

from code_mode import RuntimeConfig, SessionRuntime, YieldAfter
from tests.js_support import SAFETY, Delegate, request, run, texts

MiB = 1024 * 1024


async def test_concat_keeps_holes_subclasses_and_what_it_does_not_spread(isolation: str) -> None:
    source = """
    const r = [];
    r.push(JSON.stringify([1, 2].concat([3, , 5], 6, { a: 1 }, [[7]])));
    const h = [1, , 3].concat([,]);
    r.push(h.length, 1 in h, 3 in h);
    class A extends Array {}
    const a = A.from([1, 2]);
    r.push(a.concat([3]) instanceof A, a.concat([3]).length);
    r.push(JSON.stringify(Array.prototype.concat.call('ab', [1])));
    const o = { length: 2, 0: 'x', 1: 'y', [Symbol.isConcatSpreadable]: true };
    r.push(JSON.stringify([0].concat(o)));
    const kept = [9];
    kept[Symbol.isConcatSpreadable] = false;
    const c = [0].concat(kept);
    r.push(c.length, c[1] === kept);
    const u = [].concat([undefined, , 2]);
    r.push(u.length, 0 in u, 1 in u);
    const p = new Proxy([1, 2], {});
    r.push(JSON.stringify([0].concat(p)), JSON.stringify(Array.prototype.concat.call(p, [3])));
    text(r.join(' '))
    """
    expected = (
        '[1,2,3,null,5,6,{"a":1},[7]] 4 false false true 3 ["ab",1] [0,"x","y"] 2 true'
        " 3 true false [0,1,2] [1,2,3]"
    )
    assert await run(isolation, source) == texts(expected)


async def test_searches_keep_holes_nan_and_relative_starts(isolation: str) -> None:
    source = """
    const r = [];
    r.push([1, 2, 3].indexOf(2), [1, 2, NaN].includes(NaN), [1, 2, NaN].indexOf(NaN));
    r.push([1, , 3].indexOf(undefined), [1, , 3].includes(undefined));
    r.push([1, 2, 1].lastIndexOf(1), [1, 2, 1].lastIndexOf(1, -2), [1, 2, 1].lastIndexOf(1, -9));
    r.push([1, 2, 3].indexOf(3, -1), [1, 2, 3].includes(1, 1), [].includes(1));
    const p = new Proxy([5, 6, 7], {});
    r.push(p.indexOf(7), p.includes(6), p.lastIndexOf(5), Array.prototype.indexOf.call('abc', 'b'));
    text(r.join(' '))
    """
    expected = "1 true -1 -1 true 2 0 -1 2 false false 2 true 0 1"
    assert await run(isolation, source) == texts(expected)


async def test_json_stringify_keeps_to_json_replacers_lists_and_boxed_values(
    isolation: str,
) -> None:
    source = r"""
    const r = [];
    r.push(JSON.stringify({ a: 1, b: [1, 'x', null, undefined, () => 1],
      c: { toJSON() { return 'T' } }, d: new Date(0), e: Object('s'), f: Object(3) }));
    r.push(JSON.stringify({ b: 2, a: 1, c: { a: 3, z: 4 } }, ['a', 'c']));
    r.push(JSON.stringify({ a: [1, { b: 2 }] }, null, 1));
    r.push(JSON.stringify({ a: 1, b: 'q' }, (k, v) => (typeof v === 'number' ? v * 10 : v)));
    r.push(JSON.stringify('\u0001x'), String(JSON.stringify(undefined)));
    r.push(JSON.stringify({ '\u0001': [new Array(2)] }));
    r.push(JSON.stringify({ __proto__: 1 }, ['__proto__']));
    text(r.join('|'))
    """
    expected = (
        '{"a":1,"b":[1,"x",null,null,null],"c":"T","d":"1970-01-01T00:00:00.000Z","e":"s","f":3}'
        '|{"a":1,"c":{"a":3}}|{\n "a": [\n  1,\n  {\n   "b": 2\n  }\n ]\n}|{"a":10,"b":"q"}'
        '|"\\u0001x"|undefined|{"\\u0001":[[null,null]]}|{"__proto__":{"__proto__":null}}'
    )
    assert await run(isolation, source) == texts(expected)


async def test_regexp_methods_over_long_strings_agree_with_v8(isolation: str) -> None:
    """Over a string longer than the element budget (a 32 MiB limit: 2 Mi elements), a
    regexp whose hooks changed runs in the runtime (the specification's algorithm), and
    every regexp `split` over limit/128 characters too: each must give V8's result."""
    source = r"""
    const s = ('ab' + 'x'.repeat(98)).repeat(25000); // 2.5 M characters, 25000 matches
    const hooked = (re) => { Object.defineProperty(re, 'own', { value: 1 }); return re };
    const r = [];
    for (const template of ['[$&]', '$2$1$$', '<$<q>$1$01$0$9>', '$`'.slice(0, 1) + "$'"]) {
      const plain = /(?<q>a)(b)/g, changed = hooked(/(?<q>a)(b)/g);
      r.push(s.replace(changed, template) === s.replace(plain, template));
    }
    r.push(s.replace(hooked(/a(b)/g), (m, b, at) => (at < 8 ? b : '')).slice(0, 8));
    r.push(s.match(hooked(/b/g)).length, s.match(hooked(/x/)).index);
    const pieces = s.split(/a/);
    r.push(pieces.length, pieces[0].length, pieces[pieces.length - 1].length);
    r.push(s.split(/(a)/, 5).map((p) => p.length).join('|'), s.split(hooked(/a/)).length);
    class R extends RegExp {}
    r.push(s.split(/z/).length, s.split(new R('a')).length);
    r.push('a\u{1F600}'.repeat(200000).split(/(?:)/u).length);
    text(r.join(' '))
    """
    expected = "true true true true bxxxxxxx 25000 2 25001 0 99 0|1|99|1|99 25001 1 25001 400000"
    config = RuntimeConfig(
        isolation="thread" if isolation == "thread" else "process",
        memory_limit_bytes=32 * MiB,
    )
    async with SessionRuntime(Delegate(), config) as runtime:
        with trio.fail_after(6 * SAFETY):
            started = await runtime.execute(request(source), YieldAfter(12 * SAFETY))
            assert await started.initial_event() == texts(expected)
