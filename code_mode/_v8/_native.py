"""The lowest layer: one V8 isolate, driven through mini-racer's C interface.

mini-racer (``py_mini_racer``) ships V8 as a shared library with a small C API. Its
Python front end drives that API from an asyncio event loop (on a thread of its own
when none is running) and moves values one handle at a time. We use the C API
directly instead, because the whole conversation with an isolate fits in two narrow
paths:

* **host -> isolate**: ``mr_call_function`` of the runtime's entry point, with the JSON
  text of a batch of commands as its receiver (``this``). The host holds the function
  by a handle it took from the prelude's result, so no global leads to it: a program
  cannot call, replace or even see it. The call only posts a task to the isolate's
  message-pump thread and returns at once, so the trio thread never waits for
  JavaScript, and unlike an evaluated script it costs no compilation.
* **isolate -> host**: the JavaScript runtime writes a batch of JSON messages as UTF-16
  into a private ``ArrayBuffer`` whose backing memory we located once, then calls a
  native *doorbell* function. The doorbell runs :meth:`NativeIsolate._on_callback` on
  the isolate thread while the JavaScript is paused inside the call, so we can copy the
  bytes without any race, and hand the text to the host with a thread-safe callback.

Each mini-racer context owns one isolate and one OS thread (its message pump); nothing
else is started per cell. Creating and disposing a context block for milliseconds (V8
isolate creation, thread join), so :class:`NativeIsolate` is only constructed and
closed on a helper thread (the engine's ``BlockingWorkers``, or a worker process's). The
library itself, and V8 with its flags, are loaded once per process
(:mod:`._native_library`); V8's own heap limit for the isolate is :mod:`._heap_cap`.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from typing import Any, Final

from py_mini_racer._dll import MR_CALLBACK

from . import _channel, _pkeys
from ._heap_cap import HeapCap
from ._native_library import held_library, library
from ._native_library import live_isolate_count as live_isolate_count  # for the tests
from ._prelude import prelude_source
from ._values import (
    FIRST_PROGRAM_TAG,
    PROBE,
    QUEUED,
    TASK_ERROR,
    TASK_OK,
    TASK_OOM,
    TASK_TERMINATED,
    IsolateLimits,
    IsolateUnavailable,
    Outcome,
)

# Value type tags of mini-racer's C API (see py_mini_racer/_objects.py).
_TYPE_STR: Final = 5
_TYPE_ARRAY_BUFFER: Final = 102
_TYPE_EXECUTE_EXCEPTION: Final = 200
_TYPE_PARSE_EXCEPTION: Final = 201
_TYPE_OOM_EXCEPTION: Final = 202
_TYPE_TERMINATED_EXCEPTION: Final = 204
_ERROR_TYPES: Final = frozenset({200, 201, 202, 203, 204, 205, 206})

# Callback ids: the two doorbells, then evaluation tags (set-up and heap-cap calls
# below FIRST_PROGRAM_TAG, see set_limits).
_BELL_MORE: Final = 1
_BELL_END: Final = 2
_FIRST_TAG: Final = 16

# The runtime's outgoing buffer (see _channel.py, the one definition of its layout).
_INDEX_OFFSET: Final = _channel.byte_offset(_channel.INDEX)
_QUEUED_OFFSET: Final = _channel.byte_offset(_channel.QUEUED_FLAG)
_DEFER_OFFSET: Final = _channel.byte_offset(_channel.DEFER)
_UNITS_OFFSET: Final = _channel.UNITS_OFFSET

#: The most characters of output-only batches kept back (see
#: :meth:`NativeIsolate._deliver`) before they are handed over anyway.
KEPT_OUTPUT_CHARS: Final = 8192

# V8 initialises parts of its allocator lazily, inside the first isolate creation, and
# two threads creating the first isolates of a process at once can trip a fatal check
# (seen: "Check failed: !IsConfigurablePoolInitialized()"). Creating contexts is
# serialised process-wide (about a millisecond each). Freeing is not: it may wait for
# JavaScript stuck in a builtin, and must not hold up new isolates meanwhile.
_context_lock = threading.Lock()
# Disposals are serialised too, but only for so long: one SIGSEGV inside
# mr_free_context was seen while two threads disposed of isolates at once, and a
# disposal normally takes about a millisecond. One that waits for JavaScript stuck in a
# builtin holds the lock for longer; after DISPOSE_ALONE_SECONDS the next one goes
# ahead beside it rather than keep its cell from closing.
_dispose_lock = threading.Lock()
DISPOSE_ALONE_SECONDS: Final = 0.2
# How long close() waits for the evaluations it cancelled to end before it frees the
# context regardless (see NativeIsolate.close). They end within microseconds unless
# JavaScript is stuck in a builtin that does not check for termination, and then the
# disposal waits for it anyway.
SETTLE_SECONDS: Final = 1.0


BatchSink = Callable[[str | None], None]
"""Receives one batch of messages (JSON text), or ``None`` when a batch was dropped for
being larger than the message limit. Called on the isolate thread."""

TaskSink = Callable[[int, Outcome, str], None]
"""Receives ``(tag, outcome, detail)`` when an evaluation posted with ``post`` ends.
Called on the isolate thread."""


class NativeIsolate:
    """One V8 isolate with the code_mode prelude installed.

    The constructor and :meth:`close` block (run them on a worker thread); every other
    method returns at once and may be called from the trio thread. The two sinks are
    called on the isolate's own thread and must only hand work over (for example with
    ``TrioToken.run_sync_soon``); they must not raise.
    """

    def __init__(
        self,
        *,
        limits: IsolateLimits,
        on_batch: BatchSink,
        on_task: TaskSink,
        keep_output: bool = False,
    ) -> None:
        self._dll = library()
        self._held = held_library()
        self._on_batch = on_batch
        self._on_task = on_task
        self._max_message_chars = limits.max_message_chars
        self._chunks: list[str] = []
        self._chunk_chars = 0
        self._oversized = False
        # Output-only batches kept back until the next batch or the end of the
        # evaluation (see _deliver); the lock orders them with a flush from another
        # thread (flush_output).
        self._kept: list[str] = []
        self._kept_chars = 0
        self._kept_lock = threading.Lock()
        self._keep_output = keep_output
        self._buffer_address = 0
        self._closed = False
        # Held around every native call that names this isolate's context once it is
        # set up, on whatever thread (the trio thread's posts, the isolate thread's
        # callbacks), and by close() while it takes the context away. See close().
        self._lock = threading.Lock()
        # Set up synchronously: results of set-up evaluations arrive here.
        self._setup_results: dict[int, Any] = {}
        # Set-up evaluations use tags 16.. and the prelude; later tags come from the
        # caller, who starts far above them (see FIRST_PROGRAM_TAG).
        self._setup_done = threading.Condition()
        self._next_tag = _FIRST_TAG
        self._tasks: dict[int, int] = {}  # tag -> mini-racer task id, while in flight
        self._idle = threading.Condition(self._lock)  # close() waits for _tasks to empty
        self._quiet: set[int] = set()  # tags whose success is not reported
        self._probe_text: Any = None  # PROBE, allocated once
        self._keep: list[Any] = []  # raw handles that must live as long as the context
        self._recv: Any = None  # the runtime's entry point (a function handle)
        self._argv: Any = None  # an empty array: its arguments (the batch is `this`)
        self._heap_cap = HeapCap(self._dll, limits.memory_limit_bytes)
        self._callback = MR_CALLBACK(self._on_callback)
        with _context_lock:
            self._ctx = self._dll.mr_init_context(self._callback)
        if not self._ctx:
            raise IsolateUnavailable("failed to initialize code mode runtime")
        self._setup_phase = True
        try:
            self._dll.mr_set_hard_memory_limit(self._ctx, limits.memory_limit_bytes)
            self._install_prelude()
        except BaseException:
            self._heap_cap.close()
            self._dll.mr_free_context(self._ctx)
            self._ctx = None
            raise
        self._setup_phase = False

    # -- set-up (blocking) ------------------------------------------------------

    def _eval_blocking(self, code: str) -> Any:
        tag = self._post(code)
        with self._setup_done:
            while tag not in self._setup_results:
                self._setup_done.wait()
            return self._setup_results.pop(tag)

    def _install_prelude(self) -> None:
        dll = self._dll
        buffer = self._eval_blocking(prelude_source())
        if isinstance(buffer, str):
            raise IsolateUnavailable(f"failed to initialize code mode runtime: {buffer}")
        self._keep.append(buffer)
        self._buffer_address = int(buffer.contents.value.value_ptr)
        for name, callback_id in (("more", _BELL_MORE), ("end", _BELL_END)):
            function = dll.mr_make_js_callback(self._ctx, callback_id)
            key = self._string_value(name)
            result = dll.mr_set_object_item(self._ctx, buffer, key, function)
            for handle in (function, key, result):
                dll.mr_free_value(self._ctx, handle)
        self._recv = self._take_item(buffer, "recv")
        self._argv = self._take_item(buffer, "argv")
        self._probe_text = self._string_value(PROBE)
        self._keep.append(self._probe_text)

    def _take_item(self, holder: Any, name: str) -> Any:
        """Takes ``holder[name]`` and keeps a handle to its value (set-up only). The
        prelude's getter removes the item as it is read: each set-up call is a round
        trip to the isolate thread, so no second call deletes it."""
        dll = self._dll
        key = self._string_value(name)
        value = dll.mr_get_object_item(self._ctx, holder, key)
        dll.mr_free_value(self._ctx, key)
        if int(value.contents.type) in _ERROR_TYPES:
            dll.mr_free_value(self._ctx, value)
            raise IsolateUnavailable(f"failed to initialize code mode runtime: no {name}")
        self._keep.append(value)
        return value

    def _string_value(self, text: str) -> Any:
        data = text.encode("utf-8")
        return self._dll.mr_alloc_string_val(self._ctx, data, len(data), _TYPE_STR)

    # -- the two paths ----------------------------------------------------------

    def _post(self, code: str) -> int:
        """Evaluates ``code`` as a script (set-up only: its caller waits for the
        result, so the evaluation is over before anyone could close the isolate)."""
        tag = self._next_tag
        self._next_tag += 1
        handle = self._string_value(code)
        self._dll.mr_eval(self._ctx, handle, tag)
        self._dll.mr_free_value(self._ctx, handle)
        return tag

    def post(self, commands: str, tag: int, quiet: bool = False, probe: int | None = None) -> None:
        """Queue a call of the runtime with ``commands`` (the JSON text of an array of
        commands) on the isolate thread under ``tag`` (at least 16, unique per
        isolate); its outcome reaches ``on_task``, except the plain success of a
        ``quiet`` one (the caller learns of it from a later call: the isolate runs
        them in order). With ``probe`` (a tag), the idleness probe (:data:`PROBE`)
        is queued right behind it under that tag: it runs after the microtasks the
        call queued, so its report says the isolate went idle. One request for the
        two, which in ``process`` mode is one frame through the pipe instead of two.
        Never blocks."""
        if tag < _FIRST_TAG or (probe is not None and probe < _FIRST_TAG):
            raise ValueError("evaluation tags start at 16")
        data = commands.encode("utf-8")
        held = self._held
        _pkeys.adopt_v8_rights()  # a precaution: free after the first time per thread
        with self._lock:
            ctx = self._ctx  # None once close() began
            if not ctx:
                raise IsolateUnavailable("isolate is closed")
            if quiet:
                self._quiet.add(tag)
            handle = held.mr_alloc_string_val(ctx, data, len(data), _TYPE_STR)
            self._tasks[tag] = int(held.mr_call_function(ctx, self._recv, handle, self._argv, tag))
            held.mr_free_value(ctx, handle)
            if probe is not None:
                self._tasks[probe] = int(
                    held.mr_call_function(ctx, self._recv, self._probe_text, self._argv, probe)
                )

    def cancel(self, tag: int) -> None:
        """Interrupt the evaluation ``tag`` if it is running (V8 terminate-execution);
        a queued one is skipped. Never blocks."""
        task_id = self._tasks.get(tag)
        if task_id is None:
            return
        _pkeys.adopt_v8_rights()  # V8's terminate-execution runs on this thread
        with self._lock:
            if self._ctx:
                self._dll.mr_cancel_task(self._ctx, task_id)

    def set_limits(self, limits: IsolateLimits) -> None:
        """Change the heap limit and the largest batch accepted. Never blocks (the
        limit is a plain field that V8's garbage collection callback reads)."""
        memory_limit_bytes = limits.memory_limit_bytes
        self._max_message_chars = limits.max_message_chars
        self._heap_cap.limit = memory_limit_bytes
        _pkeys.adopt_v8_rights()  # see post()
        with self._lock:
            if self._ctx:
                self._dll.mr_set_hard_memory_limit(self._ctx, memory_limit_bytes)
                if self._heap_cap.needs_apply() and self._next_tag < FIRST_PROGRAM_TAG:
                    # Lowering V8's limit takes the isolate thread: a quiet probe (which
                    # does nothing before a start), whose completion lowers it there
                    # (_on_result), before anything posted after it runs.
                    tag = self._next_tag
                    self._next_tag += 1
                    self._quiet.add(tag)
                    self._tasks[tag] = int(
                        self._held.mr_call_function(
                            self._ctx, self._recv, self._probe_text, self._argv, tag
                        )
                    )

    def memory_limit_reached(self) -> bool:
        with self._lock:
            return self._heap_cap.reached or (
                bool(self._ctx) and bool(self._held.mr_hard_memory_limit_reached(self._ctx))
            )

    def _on_callback(self, callback_id: int, raw: Any) -> None:
        # Runs on the isolate thread. Never raise: ctypes would print and swallow it.
        try:
            if self._setup_phase and callback_id >= _FIRST_TAG:
                self._on_setup_result(callback_id, raw)
                return
            with self._lock:
                if callback_id in (_BELL_MORE, _BELL_END):
                    complete, batch, defer = self._on_bell(callback_id == _BELL_END)
                    if self._ctx:
                        self._held.mr_free_value(self._ctx, raw)
                    report = None
                else:
                    complete, batch, defer = False, None, False
                    report = self._on_result(callback_id, raw)
            # The sinks run outside the lock: they may take other locks of their own.
            if complete:
                self._deliver(batch, defer)
            if report is not None:
                # Output kept back goes before the report that the evaluation ended
                # (a quiet success is not reported: the probe queued behind it is).
                self.flush_output()
                self._on_task(*report)
        except BaseException:  # pragma: no cover - defensive
            pass

    def _on_bell(self, last: bool) -> tuple[bool, str | None, bool]:
        """Takes in one chunk of a batch: ``(True, batch, defer)`` after the last
        chunk (the batch is ``None`` if it was dropped for its size; ``defer`` when it
        holds only output, see :meth:`_deliver`), ``(False, None, False)`` before."""
        address = self._buffer_address
        if not address:
            return (False, None, False)
        count = ctypes.c_int32.from_address(address).value
        if ctypes.c_int32.from_address(address + _INDEX_OFFSET).value == 0:
            # A new batch: drop whatever a terminated write left behind.
            self._chunks = []
            self._chunk_chars = 0
            self._oversized = False
        if count < 0 or count > _channel.CHUNK_UNITS:
            self._oversized = True
        elif not self._oversized:
            self._chunk_chars += count
            if self._chunk_chars > self._max_message_chars:
                self._oversized = True
                self._chunks.clear()
            else:
                raw = ctypes.string_at(address + _UNITS_OFFSET, 2 * count)
                self._chunks.append(raw.decode("utf-16-le", "replace"))
        if not last:
            return (False, None, False)
        text = None if self._oversized else "".join(self._chunks)
        defer = ctypes.c_int32.from_address(address + _DEFER_OFFSET).value == 1
        self._chunks = []
        self._chunk_chars = 0
        self._oversized = False
        return (True, text, defer)

    def _deliver(self, text: str | None, defer: bool) -> None:
        """Hand a batch over, or, with ``keep_output``, keep it back when it holds
        only output (``defer``).

        The runtime flushes every output item at once, so that a program that prints
        and then spins has handed it over. Handing each such batch to the host at once
        made a short program cross back twice (``[started, text]``, then ``[done]``),
        and in ``thread`` mode the second doorbell waited for the GIL while the host
        handled the first. So an output-only batch waits here for the next batch (sent
        with it, as one), or for the end of the evaluation (:meth:`_on_callback` hands
        it over before the report of that), or for :meth:`flush_output` (a host that needs
        the output of a program that is still running); and it goes out at once past
        :data:`KEPT_OUTPUT_CHARS`. A worker process does not keep output back: its
        host handles the first batch while the worker makes the second (no shared
        GIL), and nothing there could ask for kept output without waiting for it."""
        with self._kept_lock:
            if text is not None and (self._kept or (defer and self._keep_output)):
                self._kept.append(text)
                self._kept_chars += len(text)
                if defer and self._kept_chars <= KEPT_OUTPUT_CHARS:
                    return
                self._release_kept()
                return
            self._release_kept()
            self._on_batch(text)

    def _release_kept(self) -> None:
        """Hand over the batches kept back (under ``_kept_lock``): as one batch when
        they fit in the message limit together."""
        held = self._kept
        if not held:
            return
        self._kept = []
        self._kept_chars = 0
        if len(held) > 1:
            merged = "[" + ",".join([batch[1:-1] for batch in held]) + "]"
            if len(merged) <= self._max_message_chars:
                held = [merged]
        for batch in held:
            self._on_batch(batch)

    def flush_output(self) -> None:
        """Hand over output kept back now (callable from any thread): the program
        may still be running, and its host needs what it printed."""
        if self._kept:
            with self._kept_lock:
                self._release_kept()

    def _output_queued(self) -> bool:
        """Whether the runtime's queue may hold output. Read on the isolate thread when
        an evaluation ended, so no JavaScript runs meanwhile (a plain memory read: no
        native call, the GIL is kept)."""
        address = self._buffer_address
        return bool(address) and ctypes.c_int32.from_address(address + _QUEUED_OFFSET).value != 0

    def _on_setup_result(self, tag: int, raw: Any) -> None:
        """The result of a set-up evaluation (the prelude's), for the constructor that
        waits for it. This runs on the isolate thread, with the isolate entered: V8's
        heap limit is set here (see :mod:`._heap_cap`), at no round trip of its own."""
        self._heap_cap.install()
        contents = raw.contents
        kind = int(contents.type)
        value: Any
        if kind in _ERROR_TYPES or kind == _TYPE_STR:
            value = contents.value.bytes_val[0 : contents.len].decode("utf-8", "replace")
            if kind not in _ERROR_TYPES:
                value = (TASK_OK, value)
            self._dll.mr_free_value(self._ctx, raw)
        else:
            value = raw  # an object handle the set-up keeps
        with self._setup_done:
            self._setup_results[tag] = value
            self._setup_done.notify_all()

    def _on_result(self, tag: int, raw: Any) -> tuple[int, Outcome, str] | None:
        """The report of an evaluation that ended (called with the lock held), or
        ``None`` when it is not reported."""
        if tag < FIRST_PROGRAM_TAG:
            self._heap_cap.apply()  # the probe set_limits posted to lower V8's limit
        self._tasks.pop(tag, None)
        if self._closed and not self._tasks:
            self._idle.notify_all()
        # ``ctx`` is None once close() began: the context goes away with every value
        # it holds, ``raw`` included (which stays readable until then).
        ctx = self._ctx
        contents = raw.contents
        kind = int(contents.type)
        detail = ""
        outcome: Outcome
        if kind == _TYPE_OOM_EXCEPTION:
            outcome = TASK_OOM
        elif kind == _TYPE_TERMINATED_EXCEPTION:
            outcome = TASK_TERMINATED
        elif kind in _ERROR_TYPES:
            outcome = TASK_ERROR
            detail = contents.value.bytes_val[0 : contents.len].decode("utf-8", "replace")
        else:
            outcome = TASK_OK
        if ctx:
            self._held.mr_free_value(ctx, raw)
        if outcome == TASK_OK and tag in self._quiet:
            # Not reported. The memory-limit flag is sticky, so the report that implies
            # this success (the probe's) also tells whether the limit was reached: one
            # native call fewer inside this callback.
            self._quiet.discard(tag)
            return None
        if outcome != TASK_OOM and (
            self._heap_cap.reached or (ctx and self._held.mr_hard_memory_limit_reached(ctx))
        ):
            outcome = TASK_OOM
        self._quiet.discard(tag)  # a failure is reported, quiet or not
        if outcome in (TASK_OK, TASK_TERMINATED) and self._output_queued():
            detail = QUEUED
        return (tag, outcome, detail)

    # -- teardown (blocking) ----------------------------------------------------

    def close(self) -> None:
        """Stop any JavaScript, join the isolate thread and free the isolate. Blocks.

        Two rules keep mini-racer's context destruction (``mr_free_context``) safe:

        * **No other native call on the context while it is destroyed.** mini-racer
          counts references to a context: each native call holds one while it runs,
          and the thread that lets go of the last one destroys the context, there
          and then. The context is taken away under the lock that every other native
          call on it holds, so once it is gone none can start or still be running, and
          the destruction happens on this thread.
        * **No evaluation running or queued when it is destroyed.** mini-racer's
          destructor cancels the evaluations queued on the isolate thread, but does not
          wait for one that has just begun: its cancellation only waits until the
          task was *posted*. Then it clears the V8 context, and an evaluation that had
          passed its cancellation check a moment earlier reads the cleared context and
          crashes the process (SIGSEGV at address 0 in ``ObjectManipulator::Call``;
          seen rarely in a benchmark, and every few seconds with evaluations posted in
          a loop while the isolate closes). So every evaluation still in flight is
          cancelled here first (``mr_cancel_task``: a queued one is skipped, a running
          one interrupted), and the context is freed only once each has reported, or
          after :data:`SETTLE_SECONDS` (an evaluation stuck that long has passed its
          start long ago; the disposal then waits for it, as it always did)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._heap_cap.close()
            ctx, self._ctx = self._ctx, None
            self._buffer_address = 0
            if ctx and self._tasks:
                for task_id in list(self._tasks.values()):
                    self._dll.mr_cancel_task(ctx, task_id)
                self._idle.wait_for(lambda: not self._tasks, timeout=SETTLE_SECONDS)
        _pkeys.adopt_v8_rights()  # Isolate::Dispose runs on this thread
        with self._kept_lock:
            self._kept = []
            self._kept_chars = 0
        if ctx:
            for handle in self._keep:
                self._dll.mr_free_value(ctx, handle)
            self._keep.clear()
            alone = _dispose_lock.acquire(timeout=DISPOSE_ALONE_SECONDS)
            try:
                self._dll.mr_free_context(ctx)
            finally:
                if alone:
                    _dispose_lock.release()
