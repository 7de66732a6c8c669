"""The runtime's start path is compiled with the prelude, not on a cell's clock.

V8 compiles functions lazily (on first call) except function expressions in
parentheses, which it compiles with their script; the runtime writes the functions
every cell's start runs that way ("Compiled ahead" in ``js/builtins.js``). A warm
isolate has evaluated the prelude before a cell takes it, so a short cell must not
compile any function of the runtime itself. V8's function-event log says which
functions it compiled when: the child process runs with ``--log-function-events``
(V8 flags are per process), and every ``parse-function`` (a lazy compilation) of a
runtime function after the cell's first call into the runtime names a function that
lacks its parentheses.
"""

from __future__ import annotations

from pathlib import Path

from ..native_child import run_child

CHILD = """
import json, threading
from code_mode._v8 import _native_library

_native_library.V8_FLAGS = (
    *_native_library.V8_FLAGS,
    "--log-function-events",
    "--logfile=LOGFILE",
    "--no-logfile-per-isolate",
)
from code_mode._v8 import FIRST_PROGRAM_TAG, NativeIsolate, IsolateLimits

batches = []
done = threading.Event()
native = NativeIsolate(
    limits=IsolateLimits(1 << 28, 1 << 20),
    on_batch=batches.append,
    on_task=lambda tag, outcome, detail: done.set(),
)
start = json.dumps([{
    "t": "start", "source": SOURCE or "", "tools": [{"ident": "echo", "description": "",
    "kind": "function"}], "stored": {}, "allow_remote_images": True,
    "max_stored_entries": 8, "max_stored_chars": 4096, "memory_limit_bytes": 1 << 28,
    "max_json_depth": 64,
}])
if SOURCE is not None:
    native.post(start, FIRST_PROGRAM_TAG, quiet=True, probe=FIRST_PROGRAM_TAG + 1)
    assert done.wait(30)
native.close()
for batch in batches:
    print(batch)
"""


def _compiles(tmp_path: Path, source: str | None) -> tuple[list[str], list[str], str]:
    """The runtime functions V8 compiled lazily (on first call) and those it parsed
    completely with their script, in a child that prepared an isolate and ran
    ``source`` in it (none: only prepared it), and what the cell sent."""
    log = tmp_path / f"v8-{source is None}.log"
    script = CHILD.replace("LOGFILE", str(log)).replace("SOURCE", repr(source))
    result = run_child(script, None)
    assert result.returncode == 0, result.describe()
    events = [line.split(",") for line in log.read_text().splitlines()]
    # By name (the cells' programs here define none).
    lazy = [event[-1] for event in events if event[:2] == ["function", "parse-function"]]
    eager = [event[-1] for event in events if event[:2] == ["function", "full-parse"]]
    return lazy, eager, result.output


def _compiled_during_the_cell(tmp_path: Path, source: str) -> tuple[list[str], str]:
    """The runtime functions compiled on the cell's clock, and what the cell sent."""
    prepared, _, _ = _compiles(tmp_path, None)
    with_cell, _, output = _compiles(tmp_path, source)
    for name in prepared:
        with_cell.remove(name)
    return with_cell, output


def test_the_prelude_calls_only_functions_compiled_ahead(tmp_path: Path) -> None:
    # A function the prelude calls while it runs (installing the buffer accounting,
    # say) would otherwise be pre-parsed and then parsed again.
    lazy, eager, _ = _compiles(tmp_path, None)
    assert "rtInstallBufferAccounting" in eager  # the log works
    assert lazy == []


def test_a_short_cell_compiles_none_of_the_runtime(tmp_path: Path) -> None:
    compiled, output = _compiled_during_the_cell(tmp_path, 'text("done");')
    assert '{"t":"text","text":"done"}' in output
    assert '"t":"done"' in output
    assert compiled == []


def test_the_log_shows_what_a_cell_compiles_on_first_use(tmp_path: Path) -> None:
    # The check above can fail: a tool call runs functions that are not compiled
    # ahead (they are not on every cell's path), and the log names them.
    compiled, output = _compiled_during_the_cell(tmp_path, "tools.echo({ a: 1 });")
    assert '"t":"tool"' in output
    assert "rtJsonProblem" in compiled
