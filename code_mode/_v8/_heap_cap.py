"""A heap limit V8 itself enforces, per isolate: the cell's memory limit as V8's own.

mini-racer's hard memory limit (``mr_set_hard_memory_limit``) is read by a callback
after each garbage collection: a program that allocates faster than V8 collects (an
array doubled by ``concat`` in a loop) passes it by a wide margin before the next
collection looks, and one that reaches V8's own heap limit first (about 1.4 GiB here)
makes V8 abort the whole process (``Fatal JavaScript out of memory``). Nothing in
mini-racer's C API lowers that limit, but the library exports V8's C++ API, and V8 has
the tools:

* ``Isolate::RemoveNearHeapLimitCallback(callback, heap_limit)`` sets the isolate's
  largest old generation to ``heap_limit`` (never below 1.25 times what is live), so
  V8 collects garbage as the cell's heap nears its memory limit instead of near 1.4 GiB;
* ``Isolate::AddNearHeapLimitCallback`` is called when a collection cannot keep the
  heap under that size. :func:`_near_heap_limit` then stops the program
  (``TerminateExecution``), records that the limit was reached (the cell fails with the
  memory limit's message), and grants V8 some room, so that it finishes the
  allocation under way instead of aborting the process.

Both are called through ``ctypes`` on the isolate's own thread (V8's heap belongs to
it, and mini-racer's message pump keeps the isolate entered there, so
``Isolate::GetCurrent`` finds it inside any completion callback): once in the callback
that reports the prelude's evaluation (no round trip of its own), and again when a
warm isolate is handed to a session with a lower limit (:meth:`HeapCap.apply`, in the
completion of a probe posted for it). A build of mini-racer without these symbols
leaves the feature off: the cell is then bounded by mini-racer's check, the JavaScript
size checks and the worker's RSS limit.

What this does not cover: one allocation larger than the whole young generation lands
in a space V8 always lets its first object into (a huge string flattened at once), and
a built-in that keeps allocating in one call (``fill`` of a sparse array) ignores the
termination until it returns. The runtime's JavaScript checks sizes before such calls
(``js/allocations.js``).
"""

from __future__ import annotations

import ctypes
import itertools
import threading
from typing import Any, Final

MiB: Final = 1024 * 1024

#: Room granted to V8 each time the heap limit is reached (at least): enough to finish
#: an allocation under way while the program is being stopped.
GRANT_MIN_BYTES: Final = 16 * MiB

_NEAR_HEAP_LIMIT = ctypes.CFUNCTYPE(
    ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t
)

# V8's C++ API, by its mangled names (x86-64 and arm64 Linux use the same ones).
_SYMBOLS: Final = {
    "current": "_ZN2v87Isolate10GetCurrentEv",
    "add": "_ZN2v87Isolate24AddNearHeapLimitCallbackEPFmPvmmES1_",
    "remove": "_ZN2v87Isolate27RemoveNearHeapLimitCallbackEPFmPvmmEm",
    "terminate": "_ZN2v87Isolate18TerminateExecutionEv",
    "new_statistics": "_ZN2v814HeapStatisticsC1Ev",
    "statistics": "_ZN2v87Isolate17GetHeapStatisticsEPNS_14HeapStatisticsE",
}

#: ``v8::HeapStatistics`` is a class of ``size_t`` fields, ``total_heap_size`` first;
#: room for more than V8 14 has, should a later one add some.
_STATISTICS_WORDS: Final = 64


class _Api:
    """V8's functions, bound once per process."""

    def __init__(self, dll: Any) -> None:
        lib = ctypes.CDLL(dll._name, handle=dll._handle)
        functions = {key: getattr(lib, name) for key, name in _SYMBOLS.items()}
        self.current = functions["current"]
        self.current.argtypes = []
        self.current.restype = ctypes.c_void_p
        self.add = functions["add"]
        self.add.argtypes = [ctypes.c_void_p, _NEAR_HEAP_LIMIT, ctypes.c_void_p]
        self.add.restype = None
        self.remove = functions["remove"]
        self.remove.argtypes = [ctypes.c_void_p, _NEAR_HEAP_LIMIT, ctypes.c_size_t]
        self.remove.restype = None
        self.terminate = functions["terminate"]
        self.terminate.argtypes = [ctypes.c_void_p]
        self.terminate.restype = None
        self.new_statistics = functions["new_statistics"]
        self.new_statistics.argtypes = [ctypes.c_void_p]
        self.new_statistics.restype = None
        self.statistics = functions["statistics"]
        self.statistics.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        self.statistics.restype = None

    def total_heap_size(self, isolate: int) -> int:
        """What the heap holds now, every space included (its capacity)."""
        words = (ctypes.c_size_t * _STATISTICS_WORDS)()
        self.new_statistics(words)
        self.statistics(isolate, words)
        return int(words[0])


_api: _Api | None = None
_api_failed = False
_api_lock = threading.Lock()
#: Live caps by the id V8 hands back to the callback as its ``data``.
_caps: dict[int, HeapCap] = {}
_ids = itertools.count(1)


def _bound_api(dll: Any) -> _Api | None:
    global _api, _api_failed
    with _api_lock:
        if _api is None and not _api_failed:
            try:
                _api = _Api(dll)
            except (AttributeError, OSError):
                _api_failed = True
        return _api


def _near_heap_limit(data: int | None, current: int, initial: int) -> int:
    """V8's near-heap-limit callback (isolate thread, inside a garbage collection).
    Must not raise, and must return a number: V8 aborts if the limit is not raised."""
    try:
        cap = _caps.get(data or 0)
        if cap is not None:
            return cap.on_near_limit(current)
    except BaseException:  # pragma: no cover - defensive
        pass
    return current + GRANT_MIN_BYTES


def _leave_as_is(data: int | None, current: int, initial: int) -> int:
    return current  # never called: only added to be removed (see HeapCap.apply)


_NEAR_CALLBACK: Final = _NEAR_HEAP_LIMIT(_near_heap_limit)
_LOWER_CALLBACK: Final = _NEAR_HEAP_LIMIT(_leave_as_is)


class HeapCap:
    """The heap limit of one isolate. :meth:`install` and :meth:`apply` run on the
    isolate thread; :attr:`limit` may be set from any thread (a plain field)."""

    def __init__(self, dll: Any, limit: int) -> None:
        self._api = _bound_api(dll)
        self._isolate: int | None = None
        self._id = next(_ids)
        self.limit = limit
        self._applied = 0
        #: Set once the heap reached the limit: the program was stopped for it.
        self.reached = False

    @property
    def active(self) -> bool:
        return self._isolate is not None

    def install(self) -> None:
        """Register with the current isolate the first time (call on its thread, in a
        callback from mini-racer: the isolate is entered there), then :meth:`apply`
        the limit."""
        api = self._api
        if api is None:
            return
        if self._isolate is None:
            isolate = api.current()
            if not isolate:
                return
            self._isolate = isolate
            _caps[self._id] = self
            api.add(isolate, _NEAR_CALLBACK, self._id)
        self.apply()

    def needs_apply(self) -> bool:
        """Whether V8's limit is above :attr:`limit` (only lowering needs the isolate
        thread; a higher limit is granted by the callback when V8 reaches the old)."""
        return self._isolate is not None and self.limit < self._applied

    def apply(self) -> None:
        """Lower V8's heap limit to :attr:`limit` (isolate thread). V8 only lowers it
        when a near-heap-limit callback is removed: one is added to be removed."""
        api, isolate = self._api, self._isolate
        if api is None or isolate is None or self.limit == self._applied:
            return
        if self.limit < self._applied or self._applied == 0:
            api.add(isolate, _LOWER_CALLBACK, None)
            api.remove(isolate, _LOWER_CALLBACK, self.v8_limit)
        self._applied = self.limit

    @property
    def v8_limit(self) -> int:
        """V8's heap limit for :attr:`limit`: half as much again. mini-racer's check
        after each collection stops a program at the limit itself; V8's own, above it,
        catches what allocates faster than V8 collects, without V8 first thrashing
        (collecting again and again, seconds long) right at the cell's limit."""
        return self.limit + self.limit // 2

    def on_near_limit(self, current: int) -> int:
        """V8 cannot keep the heap under ``current`` bytes. Below the cell's limit
        (raised since V8's was set), raise V8's to it; otherwise stop the program and
        grant room for the allocation under way."""
        if current < self.v8_limit:
            self._applied = self.limit
            return self.v8_limit
        self.reached = True
        grant = max(GRANT_MIN_BYTES, self.limit // 4)
        if self._api is None or self._isolate is None:
            return current + grant
        self._api.terminate(self._isolate)
        # The heap may already hold more than `current` (an object V8 let into its
        # young generation whatever the limit, promoted since): V8 aborts unless the
        # new limit is above what it holds.
        return max(current, self._api.total_heap_size(self._isolate)) + grant

    def close(self) -> None:
        """Forget the isolate (before it is disposed of)."""
        _caps.pop(self._id, None)
        self._isolate = None
