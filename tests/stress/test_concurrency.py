"""Concurrency stress: many sessions at once on one engine, in a child process each.

Each scenario runs in a fresh interpreter started as an application starts (see
``tests/native_child.py``), so a native crash fails the scenario with the child's
signal instead of ending the test run, and nothing initialises V8 before the library
does. The test header names the CPU and whether it has memory protection keys, which
decide whether thread-rights bugs in V8 can show at all.

``CODE_MODE_STRESS_RUNS`` (default 1) repeats every scenario in that many fresh
processes, for hunting rare crashes (the release checks use 20). The crash
reproductions of ``tests/v8/native/test_threads.py`` repeat likewise.
"""

from __future__ import annotations

import pytest

from ..native_child import RUNS, run_child

#: Programs the sessions run, each a different kind of pressure on the engine.
MIXED = r"""
import random

PROGRAMS = {
    "typed-arrays": '''
        let total = 0;
        for (let i = 0; i < 200; i++) {
            const a = new Float64Array(4096); a.fill(i); total += a[7];
            const b = new Uint8Array(a.buffer).slice(0, 1024); total += b.length;
            if (i % 50 === 0) await tools.add({a: i, b: 1});
        }
        text(String(total));
    ''',
    "image-and-timers": '''
        image("data:image/png;base64,iVBORw0KGgo=");
        await new Promise(r => setTimeout(r, 5));
        const t = setTimeout(() => text("never"), 10000); clearTimeout(t);
        text("pictured");
    ''',
    "tool-calls": '''
        const results = await Promise.all([1, 2, 3, 4].map(i => tools.add({a: i, b: i})));
        for (let i = 0; i < 5; i++) results.push(await tools.add({a: i, b: 0}));
        text(results.join(","));
    ''',
    "yield-and-wait": '''
        // @exec: {"yield_time_ms": 5}
        text("before"); yield_control();
        await new Promise(r => setTimeout(r, 20));
        text("after " + (await tools.add({a: 2, b: 3})));
    ''',
    "spin": '''
        // @exec: {"yield_time_ms": 20}
        text("spinning"); while (true) {}
    ''',
}


async def one_session(n: int, rounds: int, errors: list) -> None:
    rng = random.Random(n)
    async with session() as s:
        for _ in range(rounds):
            name = rng.choice(sorted(PROGRAMS))
            result = await s.exec(PROGRAMS[name])
            header = result[0].text
            if "SIGSEGV" in str(result) or "worker process died" in str(result):
                errors.append((name, str(result)))
            if header.startswith("Script running with cell ID "):
                cell = header.split()[5]
                if name == "spin":
                    final = await s.handle_call("wait", {"cell_id": cell, "terminate": True})
                else:
                    final = await s.handle_call("wait", {"cell_id": cell, "yield_time_ms": 10000})
                if "worker process died" in str(final):
                    errors.append((name, str(final)))
            elif header.startswith("Script failed"):
                errors.append((name, str(result)))


async def main():
    errors = []
    with trio.fail_after(150):
        async with trio.open_nursery() as nursery:
            # waves of sessions: later ones open while earlier ones run and close
            for wave in range(WAVES):
                for n in range(SESSIONS):
                    nursery.start_soon(one_session, wave * 100 + n, ROUNDS, errors)
                await trio.sleep(0.05)
    assert not errors, errors[:3]
    print("stress ok")
"""


@pytest.mark.parametrize("run", range(RUNS))
def test_many_sessions_at_once(isolation: str, run: int) -> None:
    shape = "WAVES, SESSIONS, ROUNDS = 4, 10, 4\n"
    result = run_child(shape + MIXED, isolation, timeout=170)
    assert result.returncode == 0, result.describe()
    assert "stress ok" in result.output, result.describe()
