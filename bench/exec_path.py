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
function called in it, in the order they first ran. Then how much a reader hops: the
host side's calls into the package during the ``exec`` (every Python call and every
resumption of a coroutine, as the profile hook sees them) and how many of them went to
another file than the call before (*file switches*); and the classes of the package
spread over several files (a class with a base of the package defined in another
module: a mixin, or a base class; exceptions and protocols are not counted).

The worker's confinement is turned off for the measurement (a confined worker cannot
write its trace); no code of the confinement runs on the path of an ``exec``. The
JavaScript prelude is not seen (the hook cannot see into V8): ``docs/architecture.md``
lists its files by reading the path from ``rtRecv``. A value class made by ``attrs``
runs code that is generated, not code of its file, so it is not listed.
"""

from __future__ import annotations

import argparse
import itertools
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


# Runs in the child: imports every module of the package and answers with the classes
# whose bases (of the package) are defined in other modules.
_SPREAD = """
import importlib, inspect, json, pkgutil, typing
import code_mode

spread = set()
for info in pkgutil.walk_packages(code_mode.__path__, "code_mode."):
    if info.name.endswith("__main__"):
        continue  # runs the command line
    try:
        module = importlib.import_module(info.name)
    except ImportError:
        continue  # an optional extra that is not installed
    for _, cls in inspect.getmembers(module, inspect.isclass):
        if cls.__module__ != info.name or issubclass(cls, BaseException):
            continue
        if getattr(cls, "_is_protocol", False):
            continue
        for base in cls.__bases__:
            if base.__module__.startswith("code_mode") and base.__module__ != cls.__module__:
                if not getattr(base, "_is_protocol", False):
                    spread.add(f"{cls.__module__}.{cls.__qualname__}")
print(json.dumps({"spread": sorted(spread)}))
"""


Call = tuple[float, str, str, str]
"""Seconds after the call to ``exec``, side (``host`` or ``worker``), file, function."""


def measure(checkout: Path) -> list[Call]:
    """Run the child on ``checkout``: every function of the package called during the
    timed ``exec``, once each (its first call), in the order they first ran."""
    return first_calls(trace(checkout))


def trace(checkout: Path) -> list[Call]:
    """Run the child on ``checkout``: every call into the package during the timed
    ``exec``, in the order they ran on each side."""
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
        calls: list[Call] = []
        for path in Path(hook_dir).glob("trace.*"):
            side = "host" if int(path.suffix[1:]) == host_pid else "worker"
            for when, filename, function in json.loads(path.read_text()):
                if start <= when <= end and filename.startswith(root):
                    calls.append((when - start, side, os.path.relpath(filename, root), function))
    return calls


def first_calls(calls: list[Call]) -> list[Call]:
    """Each function's first call, in the order they first ran."""
    first: dict[tuple[str, str, str], float] = {}
    for when, *key in calls:
        place = (key[0], key[1], key[2])
        first[place] = min(when, first.get(place, when))
    return sorted((when, *key) for key, when in first.items())


def file_switches(calls: list[Call], side: str = "host") -> tuple[int, int]:
    """``side``'s calls, in the order they ran (one thread on the host), and how many
    of them entered another file than the call before."""
    names = [name for _, called_on, name, _ in calls if called_on == side]
    return len(names), sum(a != b for a, b in itertools.pairwise(names))


def spread_classes(checkout: Path) -> list[str]:
    """The package's classes (``module.Class``) with a base of the package defined in
    another module, exceptions and protocols aside: one object, read in several files."""
    child = run_child(
        [sys.executable, "-c", _SPREAD],
        timeout=120,
        what="the class census child",
        checkout=checkout,
    )
    spread: list[str] = child["spread"]
    return spread


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
    checkout = args.checkout.resolve()
    calls = trace(checkout)
    rows = by_file(first_calls(calls))
    for seconds, side, name, function in rows:
        print(f"{seconds * 1000:7.2f} ms  {side:6}  {name:42}  {function}")
    spread = spread_classes(checkout)
    for name in spread:
        print(f"spread over files: {name}")
    host_calls, switches = file_switches(calls)
    files = {name for _, _, name, _ in rows}
    print(f"host: {host_calls} calls, {switches} file switches")
    print(f"{len(spread)} classes spread over files")
    print(f"{len(files)} files ({len(rows)} with the side they ran on)")


if __name__ == "__main__":
    main()
