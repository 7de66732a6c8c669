"""Issue 26's rows that are not about memory: a built-in that loops without running
JavaScript (the running-time limit and ``terminate`` must still end it), a
FinalizationRegistry callback that throws (it must not reach the worker's output), and
the per-cell nondeterminism hooks (``Math.random`` seeded, the clock recordable).

Each scenario runs in a child process (see ``tests/native_child.py``), in each
isolation mode.
"""

from __future__ import annotations

import pytest

from ..native_child import run_child

#: V8 walks every index of a generic object in one call: without the runtime's own
#: loop, neither the time limit nor leaving the session could stop it.
HUGE_SEARCHES = [
    "Array.prototype.indexOf.call({ length: 2 ** 53 - 1 }, 1)",
    "Array.prototype.lastIndexOf.call({ length: 2 ** 53 - 1 }, 1)",
    "Array.prototype.includes.call({ length: 2 ** 53 - 1 }, 1)",
    "const a = []; a.length = 2 ** 32 - 1; a.indexOf(1)",
    "let n = 0; Array.prototype.indexOf.call({ get length() { return n++ ? 2 ** 53 - 1 : 3 } }, 1)",
    # A Proxy of an array (`Array.isArray` is true for it) whose length grows after
    # the check, or whose `get` trap removes itself once it has answered.
    "let n = 0; new Proxy([1, 2, 3], { get: (t, k) => k === 'length'"
    " ? (n++ ? 2 ** 53 - 1 : 3) : Reflect.get(t, k) }).indexOf(0)",
    "let n = 0; new Proxy([1, 2, 3], { get: (t, k) => k === 'length'"
    " ? (n++ ? 2 ** 53 - 1 : 3) : Reflect.get(t, k) }).lastIndexOf(0, -1)",
    "let n = 0; const h = { get(t, k) { if (k === 'length' && n++) { delete h.get;"
    " return 2 ** 53 - 1 } return Reflect.get(t, k) } }; new Proxy([1, 2, 3], h).includes(0)",
    "let n = 0; const h = { get(t, k) { if (k === 'length' && n++) { delete h.get;"
    " return 2 ** 32 - 1 } return Reflect.get(t, k) } }; [].concat(new Proxy([0], h)).length",
]


@pytest.mark.parametrize("source", HUGE_SEARCHES)
def test_a_search_over_a_huge_length_ends_with_the_session(isolation: str, source: str) -> None:
    body = f"""
async def main():
    with trio.fail_after(60):
        async with session() as s:
            first = await s.exec({source!r})
            print("FIRST", first[0].text.splitlines()[0], flush=True)
    print("EXITED", flush=True)
"""
    result = run_child(body, isolation, timeout=120)
    assert result.returncode == 0, result.describe()
    assert "EXITED" in result.output, result.describe()


def test_a_finalization_callback_that_throws_ends_nothing(isolation: str) -> None:
    body = """
async def main():
    async with session() as a, session() as b:
        await a.exec("for (;;) await new Promise((r) => setTimeout(r, 20))")
        items = await b.exec(
            "let called = 0;"
            " const r = new FinalizationRegistry(() => { called++; throw new Error('boom') });"
            " for (let i = 0; i < 2e4; i++) r.register({ i }, i);"
            " for (let i = 0; i < 10; i++) { new Array(1e6).fill(i);"
            "   await new Promise((r) => setTimeout(r, 5)); }"
            " text('done ' + (called > 0))")
        print("B", [getattr(i, "text", "") for i in items], flush=True)
        after = await b.exec("text('next')")
        print("NEXT", [getattr(i, "text", "") for i in after], flush=True)
        still = await a.exec("text('a alive')")
        print("A", [getattr(i, "text", "") for i in still], flush=True)
"""
    result = run_child(body, isolation, timeout=120)
    assert result.returncode == 0, result.describe()
    assert "'done true'" in result.output, result.describe()
    assert "'next'" in result.output, result.describe()
    assert "'a alive'" in result.output, result.describe()
    assert "Uncaught" not in result.output, "V8 printed the callback's error"
