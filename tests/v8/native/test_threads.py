"""V8 on CPUs with memory protection keys: the threads that touch it need its rights.

Each scenario runs in a fresh Python process started exactly as a user's program
starts (nothing initialises V8 beforehand), so a native crash shows up as the child's
signal rather than taking the test run down, and the first V8 initialisation happens
wherever the library puts it.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from ...native_child import RUNS, cpu_has_pku, run_child

SCENARIOS = {
    "two-sessions-at-once": """
async def main():
    async with session() as a, session() as b:
        async with trio.open_nursery() as nursery:
            for s in (a, b):
                nursery.start_soon(s.exec, "text(await tools.add({a: 1, b: 2}))")
""",
    "terminate-a-spinning-cell": """
async def main():
    for _ in range(3):
        async with session() as s:
            await s.exec('// @exec: {"yield_time_ms": 100}\\ntext("phase 1"); while (true) {}')
""",
    "close-after-image": """
async def main():
    for _ in range(3):
        async with session() as s:
            await s.exec('image("data:image/png;base64,iVBORw0KGgo="); '
                         'await new Promise(r => setTimeout(r, 100))')
            await s.exec("text(1)")
""",
    "completion-while-another-cell-calls-tools": """
async def main():
    async with session() as s:
        await s.exec('// @exec: {"yield_time_ms": 10}\\nyield_control(); '
                     'await new Promise(r => setTimeout(r, 50)); text("one")')
        await s.exec('// @exec: {"yield_time_ms": 10}\\nyield_control(); '
                     'for (let i = 0; i < 20; i++) text(await tools.add({a: i, b: 1}))')
        for cell in ("1", "2", "1", "2"):
            result = await s.handle_call("wait", {"cell_id": cell, "yield_time_ms": 200})
            assert "SIGSEGV" not in str(result), result
""",
}


@pytest.mark.parametrize("run", range(RUNS))
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_scenario_survives(isolation: str, scenario: str, run: int) -> None:
    result = run_child(SCENARIOS[scenario], isolation)
    assert result.returncode == 0, result.describe()
    assert "worker process died" not in result.output, result.describe()


def test_adopting_v8_rights_gives_a_thread_those_of_v8s_initialising_thread() -> None:
    """A thread started before V8 existed gets V8's key rights once it adopts them."""
    script = """
import threading
from code_mode._v8 import _native_library, _pkeys

ready, go, seen = threading.Event(), threading.Event(), {}

def early_thread():
    ready.set()
    go.wait()
    seen["before"] = _pkeys.current_rights()
    _pkeys.adopt_v8_rights()
    seen["after"] = _pkeys.current_rights()

thread = threading.Thread(target=early_thread)
thread.start()
ready.wait()
worker = threading.Thread(target=_native_library.initialise_v8)  # V8 starts on another thread
worker.start()
worker.join()
go.set()
thread.join()
print(repr((_pkeys.supported(), _pkeys.v8_rights(), seen["before"], seen["after"])))
"""
    result = run_child(script, None)
    assert result.returncode == 0, result.describe()
    supported, v8, before, after = eval(result.output.strip().splitlines()[-1])
    assert supported or not cpu_has_pku() or os.environ.get("LD_PRELOAD")
    if not supported:
        assert (v8, before, after) == (None, None, None)
        pytest.skip(
            "no memory protection keys here (no pku in /proc/cpuinfo, or pkey_alloc "
            "refused): V8 tags nothing with a key, so there are no rights to adopt"
        )
    assert v8 is not None
    assert before != v8, "V8 allocated no key the early thread lacked: nothing was tested"
    assert after == v8


def test_counting_isolates_does_not_initialise_v8() -> None:
    """The tests' leak check must not decide which thread initialises V8 (an early
    initialisation on the main thread hid the crashes above from the suite)."""
    result = run_child(
        "from code_mode._v8 import _native, _native_library\n"
        "assert _native.live_isolate_count() == 0\n"
        "assert _native_library._dll is None\n"
        "print('untouched')\n",
        None,
    )
    assert result.returncode == 0, result.describe()
    assert result.output.strip().endswith("untouched")


#: Makes ``pkey_alloc`` refuse every key, as on a CPU without protection keys: V8 then
#: protects nothing with them, and code_mode's rights handling must stand aside.
NO_PKEYS_SHIM = r"""
#include <errno.h>
int pkey_alloc(unsigned int flags, unsigned int access_rights) {
    (void)flags; (void)access_rights;
    errno = ENOSPC;
    return -1;
}
"""


@pytest.fixture(scope="module")
def no_pkeys_shim(tmp_path_factory: pytest.TempPathFactory) -> str:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler (cc or gcc) to build the pkey_alloc shim")
    folder = tmp_path_factory.mktemp("shim")
    (folder / "nopkeys.c").write_text(NO_PKEYS_SHIM)
    library = folder / "libnopkeys.so"
    subprocess.run(
        [compiler, "-shared", "-fPIC", "-o", str(library), str(folder / "nopkeys.c")], check=True
    )
    return str(library)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_scenario_survives_without_protection_keys(
    isolation: str, scenario: str, no_pkeys_shim: str
) -> None:
    """The same scenarios as on a CPU without ``pku`` (simulated where the CPU has it)."""
    body = "from code_mode._v8 import _pkeys\nassert not _pkeys.supported()\n"
    result = run_child(body + SCENARIOS[scenario], isolation, env={"LD_PRELOAD": no_pkeys_shim})
    assert result.returncode == 0, result.describe()
    assert "worker process died" not in result.output, result.describe()
