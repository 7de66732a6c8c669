"""Memory protection key rights for the threads that touch V8.

Why this module exists
----------------------
On x86-64 CPUs with *memory protection keys* (``pku`` in ``/proc/cpuinfo``), V8 tags
some of its memory (JIT code, the dispatch table of its sandbox) with a protection key
of its own, allocated with ``pkey_alloc`` while V8 initialises. Whether a thread may
read or write memory tagged with a key is decided by that thread's PKRU register, and
the rules are per thread:

* ``pkey_alloc`` grants rights on the new key to the calling thread only;
* a new thread starts with a *copy* of its creator's PKRU;
* every other thread keeps the kernel's default for a key it has never been given,
  which is "no access".

So only the thread that initialised V8, and threads it creates afterwards (and their
descendants), may touch V8's protected memory. mini-racer creates an isolate
(``v8::Isolate::New``) on the thread that calls ``mr_init_context``, starts the isolate's
message pump from that thread, and disposes of the isolate (``Isolate::Dispose``) on
the thread that calls ``mr_free_context``. If any of those threads existed before V8
was initialised, or descends from one that did (the trio thread, a thread started when
a session opened), its first access to protected memory is a protection-key fault:
SIGSEGV, with ``error 25`` in the kernel log, typically in
``JSDispatchTable::PreAllocatedEntryNeedsInitialization``.

The fix keeps V8's protection on and gives our threads the rights V8 expects them to
have: right after V8 is initialised, :func:`record_initial_rights` reads the
initialising thread's rights for every key; every thread that calls into mini-racer
for an isolate (creates or disposes of it, or posts to it: a call holds a reference to
the context, so the thread whose call ends last may be the one that destroys it) calls
:func:`adopt_v8_rights` first, which writes the same rights into its
own PKRU, exactly what it would have inherited had V8's initialising thread created
it. Threads a V8-blessed thread starts (an isolate's message pump) inherit them.

On a CPU or kernel without protection keys everything here is a no-op. (Reading PKRU
where the CPU lacks the feature is an illegal instruction, so support is probed with
the ``pkey_alloc`` system call, which simply fails there, before any PKRU access.)
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any, Final

#: Keys 0..15 exist on x86-64; key 0 is the default key of all memory.
_KEYS: Final = range(1, 16)

_lock = threading.Lock()
_libc: Any = None
_supported: bool | None = None
_rights: tuple[int, ...] | None = None
_local = threading.local()


def _load() -> Any:
    global _libc, _supported
    if _supported is None:
        try:
            # The process's global symbols, as V8 sees them (an LD_PRELOAD'ed
            # pkey_alloc that refuses keys turns them off for V8 and for us alike).
            libc = ctypes.CDLL(None, use_errno=True)
            alloc, free = libc.pkey_alloc, libc.pkey_free
            libc.pkey_get, libc.pkey_set  # noqa: B018 - present with glibc >= 2.27
        except (OSError, AttributeError):
            _supported = False
            return None
        key = alloc(0, 0)
        _supported = key >= 0
        if _supported:
            free(key)
            _libc = libc
    return _libc


def supported() -> bool:
    """Whether this CPU and kernel have memory protection keys in use."""
    with _lock:
        _load()
        return bool(_supported)


def record_initial_rights() -> None:
    """Remember the calling thread's rights on every key. Call it on the thread that
    has just initialised V8, and only then."""
    with _lock:
        libc = _load()
        if libc is None:
            return
        global _rights
        _rights = tuple(int(libc.pkey_get(key)) for key in _KEYS)
    _local.adopted = True


def adopt_v8_rights() -> None:
    """Give the calling thread the rights of the thread that initialised V8 (once per
    thread; later calls are free). A no-op without protection keys, and before V8 was
    initialised by :mod:`code_mode._v8._native` (nothing to copy yet)."""
    if getattr(_local, "adopted", False):
        return
    with _lock:
        libc, rights = _libc, _rights
    if libc is None or rights is None:
        return
    for key, wanted in zip(_KEYS, rights, strict=True):
        if wanted >= 0 and libc.pkey_get(key) != wanted:
            libc.pkey_set(key, wanted)
    _local.adopted = True


def current_rights() -> tuple[int, ...] | None:
    """The calling thread's rights on keys 1..15, or ``None`` without protection keys
    (for tests and diagnostics)."""
    with _lock:
        libc = _load()
    if libc is None:
        return None
    return tuple(int(libc.pkey_get(key)) for key in _KEYS)


def v8_rights() -> tuple[int, ...] | None:
    """The rights recorded from V8's initialising thread, if any (for tests)."""
    with _lock:
        return _rights
