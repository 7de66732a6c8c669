"""Issue 26's rows that are not about memory: a built-in that loops without running
JavaScript (the running-time limit and ``terminate`` must still end it), a
FinalizationRegistry callback that throws (it must not reach the worker's output), and
the per-cell nondeterminism hooks (``Math.random`` seeded, the clock recordable).

Each scenario runs in a child process (see ``tests/native_child.py``), in each
isolation mode.
"""

from __future__ import annotations

import textwrap

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
            # Handed back running after 200 ms: what is tested is that leaving the
            # session block then ends the search (the default 10 s yield only waited).
            first = await s.exec('// @exec: {{"yield_time_ms": 200}}\\n' + {source!r})
            print("FIRST", first[0].text.splitlines()[0], flush=True)
    print("EXITED", flush=True)
"""
    result = run_child(body, isolation, timeout=120)
    assert result.returncode == 0, result.describe()
    # Still searching when the session leaves, or (read once: the length that the
    # check saw) already done.
    first = next(line for line in result.output.splitlines() if line.startswith("FIRST"))
    assert first.split()[1:3] in (["Script", "running"], ["Script", "completed"]), first
    assert "EXITED" in result.output, result.describe()


#: The methods that walk every index up to a length (code_mode/_v8/js/walks.js): over
#: an object of a huge length and no elements, or an array of 2 ** 32 - 1 holes, V8
#: ran no JavaScript for days; the session closed only by giving up on the thread (in
#: thread mode, ``CLOSE_PATIENCE``, leaving it walking) or killing the worker process.
#: `sort` of such an object was worse: V8 allocated for its length and the process
#: (the host's, in thread mode) died.
HUGE = "{ length: 2 ** 53 - 1 }"
SPARSE = "(() => { const a = []; a.length = 2 ** 32 - 1; a[7] = 1; return a })()"
HUGE_WALKS = [
    f"Array.prototype.forEach.call({HUGE}, (x) => x)",
    "Array.prototype.map.call({ length: 2 ** 32 - 1 }, (x) => x)",
    f"Array.prototype.filter.call({HUGE}, (x) => x)",
    f"Array.prototype.some.call({HUGE}, (x) => x)",
    f"Array.prototype.every.call({HUGE}, (x) => !x)",
    f"Array.prototype.reduce.call({HUGE}, (a) => a, 0)",
    f"Array.prototype.reduceRight.call({HUGE}, (a) => a, 0)",
    f"Array.prototype.find.call({HUGE}, Boolean)",
    f"Array.prototype.findLastIndex.call({HUGE}, Boolean)",
    f"Array.prototype.flatMap.call({HUGE}, (x) => x)",
    "Array.prototype.join.call({ length: 2 ** 31 }, '')",
    "Array.prototype.toLocaleString.call({ length: 2 ** 31 })",
    f"Array.prototype.copyWithin.call({HUGE}, 0, 1)",
    f"Array.prototype.reverse.call({HUGE})",
    f"Array.prototype.sort.call({HUGE})",
    f"Array.prototype.splice.call({HUGE}, 0, 1)",
    f"Array.prototype.slice.call({HUGE}, 0, 2 ** 32 - 1)",
    f"Array.prototype.flat.call({HUGE})",
    f"Array.prototype.shift.call({HUGE})",
    "Array.prototype.unshift.call({ length: 2 ** 53 - 2 }, 1)",
    f"{SPARSE}.forEach((x) => x)",
    f"{SPARSE}.map((x) => x)",
    f"{SPARSE}.join('')",
    f"{SPARSE}.sort()",
    f"{SPARSE}.reverse()",
    f"String.raw({{ raw: {HUGE} }})",
]
#: Terminated rather than stopped by the time limit (the same interrupt: a few).
TERMINATED_WALKS = [HUGE_WALKS[0], HUGE_WALKS[14], HUGE_WALKS[-5], HUGE_WALKS[-1]]


@pytest.mark.parametrize(
    ("source", "how"),
    [(source, "time limit") for source in HUGE_WALKS]
    + [(source, "terminate") for source in TERMINATED_WALKS],
)
def test_a_walk_over_a_huge_length_ends_with_the_session(
    isolation: str, source: str, how: str
) -> None:
    """The cell ends at the running-time limit (or is terminated), and the session
    closes at once: the walk was stopped, not abandoned on a thread or killed."""
    if how == "time limit":
        run = f"""
        first = await s.exec('// @exec: {{"yield_time_ms": 30000}}\\n' + {source!r})
        print("FIRST", first[0].text.splitlines()[0], first[-1].text, flush=True)
"""
    else:
        run = f"""
        first = await s.exec('// @exec: {{"yield_time_ms": 300}}\\n' + {source!r})
        cell = re.search(r"cell ID (\\S+)", first[0].text).group(1)
        ended = await s.wait(cell, terminate=True)
        print("FIRST", ended[0].text.splitlines()[0], flush=True)
"""
    body = f"""
import re, time

async def main():
    with trio.fail_after(60):
        async with session(config={{"max_cell_seconds": 1.0}}) as s:
{textwrap.indent(textwrap.dedent(run), " " * 12)}
            leaving = time.monotonic()
    print("CLOSED", time.monotonic() - leaving, flush=True)
"""
    result = run_child(body, isolation, timeout=120)
    assert result.returncode == 0, result.describe()
    first = next(line for line in result.output.splitlines() if line.startswith("FIRST"))
    if how == "time limit":
        assert "Script failed" in first, result.describe()
        # (String.raw's text outgrows the memory limit first.)
        assert "exceeded its running-time limit" in result.output or "String.raw" in source, (
            result.describe()
        )
    else:
        assert "Script terminated" in first, result.describe()
    closed = next(line for line in result.output.splitlines() if line.startswith("CLOSED"))
    assert float(closed.split()[1]) < 2.0, result.describe()


def test_a_finalization_callback_that_throws_ends_nothing(isolation: str) -> None:
    body = """
async def main():
    async with session() as a, session() as b:
        # A bystander handed back running (after 100 ms, not the default 10 s yield).
        await a.exec('// @exec: {"yield_time_ms": 100}\\n'
                     "for (;;) await new Promise((r) => setTimeout(r, 20))")
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
