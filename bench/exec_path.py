"""Which Python files run while one ``exec`` travels to the JavaScript and back.

    python -m bench.exec_path                    # this checkout
    python -m bench.exec_path --checkout DIR     # another one (a worktree of an older commit)

A reader following an ``exec`` opens, at the least, every file whose code runs on the
way. This measures that set: a warm session (its second ``exec`` of ``text("done")``,
default configuration, ``process`` mode) runs in a child process with a profile hook
in the host, in the worker process and on the worker's native doorbell thread (which
``sys.setprofile`` alone does not reach: the hook profiles each doorbell callback from
inside it). Every file of the package that has a function called between the call to
``exec`` and its return is listed, on its side (``host`` or ``worker``), with the first
function called in it, in the order they first ran.

The worker's confinement is turned off for the measurement (a confined worker cannot
write its trace); no code of the confinement runs on the path of an ``exec``. The
JavaScript prelude is not seen (the hook cannot see into V8): ``docs/architecture.md``
lists its files by reading the path from ``rtRecv``. A value class made by ``attrs``
runs code that is generated, not code of its file, so it is not listed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from .child_process import ROOT, run_child

# Installed as ``sitecustomize`` in both processes: the host and its worker record
# every call into a file of the package, and write them out at exit.
_HOOK = '''
import atexit, importlib.abc, importlib.machinery, json, os, sys, threading, time

_OUT = os.environ["EXEC_PATH_TRACE"]
_events = []


def _hook(frame, event, arg):
    if event == "call" and "code_mode" in frame.f_code.co_filename:
        _events.append((time.time(), frame.f_code.co_filename, frame.f_code.co_name))


def _dump():
    with open(f"{_OUT}.{os.getpid()}", "w") as file:
        json.dump(_events, file)


sys.setprofile(_hook)
threading.setprofile(_hook)
atexit.register(_dump)


class _ProfileDoorbell(importlib.abc.MetaPathFinder):
    """Profile each native callback of an isolate (on a thread V8 started)."""

    def find_spec(self, name, path, target=None):
        if name != "code_mode._v8._native":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            callback = module.NativeIsolate._on_callback

            def _on_callback(self, *args):
                sys.setprofile(_hook)
                _hook(sys._getframe(), "call", None)
                try:
                    return callback(self, *args)
                finally:
                    sys.setprofile(None)

            module.NativeIsolate._on_callback = _on_callback

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _ProfileDoorbell())
'''

# Runs in the child: two execs, the second one timed; answers (``run_child``) with the
# package's directory, the child's pid (whose trace is the host's) and the window.
_CHILD = """
import json, os, time
import trio
import code_mode
from code_mode import CodeModeSession, Engine, EngineConfig

async def main():
    async with Engine(EngineConfig(confine_workers=False)) as engine:
        async with CodeModeSession(tools=[], engine=engine) as session:
            await session.exec('text("warm")')
            await trio.sleep(0.5)  # the warm isolate is made again meanwhile
            start = time.time()
            await session.exec('text("done")')
            return start, time.time()

start, end = trio.run(main)
print(json.dumps({
    "root": os.path.dirname(code_mode.__file__), "pid": os.getpid(), "start": start, "end": end
}))
"""


Call = tuple[float, str, str, str]
"""Seconds after the call to ``exec``, side (``host`` or ``worker``), file, function."""


def measure(checkout: Path) -> list[Call]:
    """Run the child on ``checkout``: every function of the package called during the
    timed ``exec``, once each (its first call), in the order they first ran."""
    with tempfile.TemporaryDirectory() as hook_dir:
        Path(hook_dir, "sitecustomize.py").write_text(_HOOK)
        env = dict(os.environ)
        env["PYTHONPATH"] = hook_dir  # after the checkout (see run_child)
        env["EXEC_PATH_TRACE"] = os.path.join(hook_dir, "trace")
        child = run_child(
            [sys.executable, "-c", _CHILD],
            timeout=120,
            what="the exec-path child",
            env=env,
            checkout=checkout,
        )
        root, host_pid, start, end = (child[key] for key in ("root", "pid", "start", "end"))
        first: dict[tuple[str, str, str], float] = {}
        for path in Path(hook_dir).glob("trace.*"):
            side = "host" if int(path.suffix[1:]) == host_pid else "worker"
            for when, filename, function in json.loads(path.read_text()):
                if start <= when <= end and filename.startswith(root):
                    key = (side, os.path.relpath(filename, root), function)
                    first[key] = min(when, first.get(key, when))
    return sorted((when - start, *key) for key, when in first.items())


def by_file(calls: list[Call]) -> list[Call]:
    """The first call into each file, on each side."""
    seen: set[tuple[str, str]] = set()
    firsts = []
    for call in calls:
        if (call[1], call[2]) not in seen:
            seen.add((call[1], call[2]))
            firsts.append(call)
    return firsts


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, default=ROOT)
    args = parser.parse_args(argv)
    rows = by_file(measure(args.checkout.resolve()))
    for seconds, side, name, function in rows:
        print(f"{seconds * 1000:7.2f} ms  {side:6}  {name:42}  {function}")
    files = {name for _, _, name, _ in rows}
    print(f"{len(files)} files ({len(rows)} with the side they ran on)")


if __name__ == "__main__":
    main()
