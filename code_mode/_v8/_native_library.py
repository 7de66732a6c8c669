"""mini-racer's shared library, loaded once per process, and V8 with it.

V8 reads its flags once per process, from whoever initialises it first, and the thread
that initialises it is the one V8 gives rights on its memory protection key (see
:mod:`._pkeys`). So the library is loaded in one place: :func:`library` initialises V8
with :data:`V8_FLAGS` on first use and makes every caller adopt V8's rights;
:func:`held_library` is the view of it whose cheap functions keep the GIL. Everything
here is process-wide; one isolate is :class:`~code_mode._v8._native.NativeIsolate`.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any, Final

from py_mini_racer import _dll as mini_racer_dll
from py_mini_racer import init_mini_racer

from . import _pkeys

#: V8 flags, read once per process by whoever initialises mini-racer first.
#: ``--single-threaded`` is mini-racer's default (no V8 worker threads).
#: Functions are compiled lazily (V8's default), on first call, except those of the
#: runtime's start path, which the prelude marks for compilation with it (see
#: "Compiled ahead" in ``js/builtins.js``): the prelude is compiled ahead of time in the
#: warm pool, so a cell does not pay for compiling its start path, and the rest of the
#: runtime is only pre-parsed. (``--no-lazy`` did the former by compiling every
#: function of the prelude: about 1 ms of CPU more per isolate.)
#: ``--no-maglev`` leaves out V8's mid-tier optimising compiler (code still goes from
#: the interpreter through Sparkplug to TurboFan). With ``--single-threaded`` V8
#: compiles on the isolate's own thread, and a program interrupted in a loop that
#: Maglev compiled (on-stack replacement) took 0.3-1.4 ms to stop instead of 0.1-0.3
#: ms: most of ``terminate()``'s time. No measurable cost on tool calls, a cell's
#: start, or compute-heavy programs (see docs/performance.md, optimisation 23).
#: ``--expose-gc-as=Atomics`` gives the runtime a way to force a full collection before
#: it fails a cell for its ArrayBuffer memory (``js/buffers.js``). V8 installs the gc
#: function in every context under that name; ``Atomics`` already exists there as an
#: ordinary configurable property, so V8 only replaces its *value*. The runtime takes
#: the function (``js/builtins.js``) and deletes ``Atomics``, as it does anyway: a
#: program sees no trace of it (a name of its own, as before, was a global no program
#: could delete or stop seeing). Without the flag (another user of mini-racer
#: initialised V8 first) ``Atomics`` is the real object and buffers are credited back
#: only after collections V8 makes on its own. Other V8 contexts of a process that runs
#: isolates in threads see the gc function in place of ``Atomics``.
V8_FLAGS = ("--single-threaded", "--no-maglev", "--expose-gc-as=Atomics")

_dll: Any = None
_dll_lock = threading.Lock()


def library() -> Any:
    """mini-racer's library, initialising V8 on first use.

    The thread that initialises V8 is the one V8 gives rights on its memory protection
    key (see :mod:`._pkeys`): its rights are recorded here, and every thread that later
    creates or disposes of an isolate adopts them."""
    global _dll
    with _dll_lock:
        if _dll is None:
            ours = mini_racer_dll._dll_handle is None
            _dll = init_mini_racer(flags=V8_FLAGS, ignore_duplicate_init=True)
            if ours:
                _pkeys.record_initial_rights()
        _pkeys.adopt_v8_rights()
        return _dll


#: Functions of mini-racer's C API that only take a short internal lock (the value
#: registry, the task queue) or read a flag, and never wait for JavaScript or for a
#: thread that may hold the GIL (mini-racer calls back into Python outside its locks).
_HELD_FUNCTIONS: Final = (
    "mr_alloc_string_val",
    "mr_call_function",
    "mr_free_value",
    "mr_hard_memory_limit_reached",
)
_held: Any = None


def held_library() -> Any:
    """The functions of :data:`_HELD_FUNCTIONS`, called *without* letting go of the
    GIL (``ctypes.PyDLL``; ``ctypes.CDLL`` releases and re-acquires it around every
    call). They run on the hot path of every tool call, a few per call on the trio
    thread and inside the isolate thread's callbacks, and take microseconds: letting
    go of the GIL there only invited the other thread to take it, and then waiting
    for it back (a hand-over, often a wake-up, per call)."""
    global _held
    dll = library()
    with _dll_lock:
        if _held is None:
            held = ctypes.PyDLL(dll._name, handle=dll._handle)
            for name in _HELD_FUNCTIONS:
                function, original = getattr(held, name), getattr(dll, name)
                function.argtypes = original.argtypes
                function.restype = original.restype
            _held = held
        return _held


def initialise_v8() -> None:
    """Initialise V8 on the calling thread now (it happens on first use otherwise)."""
    library()


def live_isolate_count() -> int:
    """How many mini-racer contexts (isolates) exist in this process (for tests).

    Does not initialise V8: a test that counts isolates must not change which thread
    initialises it (that thread's protection-key rights matter, see :mod:`._pkeys`)."""
    with _dll_lock:
        dll = _dll
    return 0 if dll is None else int(dll.mr_context_count())
