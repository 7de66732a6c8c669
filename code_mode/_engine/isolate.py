"""The trio-facing handle of one isolate running one program.

:class:`Isolate` hides the native layer from the cell: the cell says "start this
program", "here is the result of ``tool-3``", "timer 2 fired", "terminate", and hears
back typed events through an :class:`EngineListener`, all on the trio thread.

Commands are coalesced: a command goes to the isolate at once, as one evaluation
followed by a *probe* in one request to the backend, while fewer than
:data:`MAX_POSTS_IN_FLIGHT` such requests are in flight; otherwise it waits for one of
them to end and goes with every other command that arrived meanwhile. Because the
isolate thread runs posted tasks in order and drains microtasks after each one, the
last probe finishing means every input sent so far has been processed and the
microtask queue is empty; when no evaluation is left in flight the listener hears
:meth:`EngineListener.on_engine_idle`, which the cell uses to detect a pending
frontier.
"""

from __future__ import annotations

import functools
import json
import logging
import random
import re
from collections import deque
from typing import Any

import trio

from .._config import RuntimeConfig
from .._resumption import JournalMirror
from .._v8 import (
    DRAIN,
    FIRST_PROGRAM_TAG,
    QUEUED,
    TASK_ERROR,
    TASK_OK,
    TASK_OOM,
    TASK_TERMINATED,
    IsolateLimits,
    Outcome,
)
from ._backend import IsolateHandle, IsolateSink, IsolateSource
from ._backlog import ReportBacklog, parse_batch
from ._bridge import (
    ClockRead,
    EngineEvent,
    EngineListener,
    Finished,
    MessageValidator,
    Output,
    ProtocolViolation,
    dumps,
)
from ._decode import decode_inline
from ._module_source import module_source
from ._syntax_error import syntax_error_text
from .journal import Journal
from .recovery import IsolateRecovery
from .resume import DurableGate, ResumePlan

#: Requests (a command batch and its probe) the isolate may have queued at once. Two,
#: so that a tool result goes out while the probe of the batch that led to the call is
#: still on its way back (in a sequential loop of calls it nearly always is): the
#: result no longer waits for that report and one more crossing, and the isolate
#: thread finds its next work queued instead of going to sleep. More would only split
#: a burst of results (``Promise.all``) into more, smaller batches.
MAX_POSTS_IN_FLIGHT = 2

#: How long a terminating isolate gets to hand over output it had queued but not yet
#: sent, after its JavaScript was interrupted. A program spinning in its microtask
#: queue never answers; it is then torn down without that last output.
DRAIN_TIMEOUT = 0.05

logger = logging.getLogger("code_mode.engine")


def isolate_limits(config: RuntimeConfig) -> IsolateLimits:
    """What an isolate of a session with ``config`` may use (the one place the
    session's settings become the worker half's limits)."""
    return IsolateLimits(
        memory_limit_bytes=config.memory_limit_bytes,
        max_message_chars=config.max_message_chars,
    )


@functools.lru_cache(maxsize=64)
def _start_settings(config: RuntimeConfig) -> str:
    """The part of a start command that depends only on the configuration (a frozen,
    hashable value), as JSON members: the same text for every cell of a session,
    encoded once."""
    settings = {
        "allow_remote_images": config.allow_remote_image_urls,
        "max_stored_entries": config.max_stored_entries,
        "max_stored_chars": config.max_stored_chars,
        "max_json_depth": config.max_json_depth,
        "memory_limit_bytes": config.memory_limit_bytes,
    }
    return "," + dumps(settings)[1:-1]


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape_lone_surrogates(commands: str) -> str:
    """``commands`` (JSON text) with each lone surrogate written as a ``\\uXXXX``
    escape. They can only stand inside JSON strings (a program's source, a stored key, a
    tool result), where the escape means the same character; the raw character has no
    UTF-8 form, so the native layer could not pass the text on at all."""
    if commands.isascii():
        return commands
    try:
        commands.encode("utf-8")
    except UnicodeEncodeError:
        return _LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", commands)
    return commands


class Isolate(ReportBacklog, IsolateRecovery):
    """One V8 isolate running one program, seen from trio."""

    def __init__(
        self,
        backend: IsolateSource,
        config: RuntimeConfig,
        *,
        nursery: trio.Nursery | None = None,
        mirror: JournalMirror | None = None,
    ) -> None:
        self._backend = backend
        self._config = config
        self._limits = isolate_limits(config)
        # Replay (see journal.py): only where a worker process can die under a cell
        # that lives on, and with a nursery to rebuild the isolate in.
        self._nursery = nursery
        # A mirrored journal (resume.py) lets another host resume the cell: what it
        # copies is made durable before the isolate or a tool acts on it (the gate).
        self._replays_here = nursery is not None and bool(getattr(backend, "replays_cells", False))
        journaled = self._replays_here or (nursery is not None and mirror is not None)
        self._journal = Journal(config.max_journal_chars, mirror) if journaled else None
        self._gate = (
            DurableGate(mirror, nursery, self._after_post)
            if mirror is not None and nursery is not None
            else None
        )
        self._plan: ResumePlan | None = None  # resuming another host's cell
        self._batches_posted = 0  # batches journaled (a held one may be replayed meanwhile)
        self._replay_horizon = 0  # batches a replay has posted again
        self._recovery: trio.CancelScope | None = None  # a replay being set up
        self._replay_tag = -1  # the last probe of a replay's batches
        self._replays = 0
        self._alone = False  # replayed on a worker of its own (a suspect)
        self._tool_kinds: dict[str, str] = {}
        # A hand-over (quiesce): no call starts; those started and not yet answered.
        self._holding_calls = False
        self._calls_out: set[str] = set()
        self._quiet: trio.Event | None = None
        self._native: IsolateHandle | None = None
        self._next_tag = FIRST_PROGRAM_TAG
        self._listener: EngineListener | None = None
        self._validator: MessageValidator | None = None
        self._token = trio.lowlevel.current_trio_token()
        self._outbox: list[str] = []
        self._in_flight: set[int] = set()  # probes (reported) not yet ended
        self._quiet_in_flight: set[int] = set()  # commands (success unreported)
        self._terminating = False
        self._drained: trio.Event | None = None
        self._drain_tag = -1
        self._unconfirmed = False  # interrupted, terminate() has not waited yet
        # The last report said the runtime's queue held no output, and nothing has
        # been posted since (see terminate()).
        self._clean = False
        self._failed = False
        self._closed = False
        self._source = ""
        # Reports waiting behind a batch decoded on a thread, in the order they came:
        # ("batch", text), ("task", tag, outcome, detail), ("crash", message).
        self._backlog: deque[tuple[Any, ...]] = deque()
        self._backlog_chars = 0

    # -- lifecycle ----------------------------------------------------------------

    async def create(self) -> None:
        """Create the isolate and install the prelude (raises ``IsolateUnavailable``)."""
        self._native = await self._backend.create_isolate(self, self._limits)

    def take_ready(self) -> bool:
        """Take a warm isolate if one is ready now, without waiting (then no
        :meth:`create`); False when there is none."""
        self._native = self._backend.take_ready_isolate(self, self._limits)
        return self._native is not None

    def _post(self, code: str) -> int:
        assert self._native is not None
        tag = self._next_tag
        self._next_tag += 1
        self._in_flight.add(tag)
        self._clean = False
        self._native.post(code, tag)
        return tag

    def _sink(self) -> IsolateSink:
        return self

    def _post_with_probe(self, code: str) -> None:
        """Post ``code`` quietly, with the probe (tag + 1) queued right behind it, in
        one request: the probe's report alone says both succeeded."""
        assert self._native is not None
        tag = self._next_tag
        self._next_tag += 2
        self._quiet_in_flight.add(tag)
        self._in_flight.add(tag + 1)
        self._clean = False
        self._native.post(code, tag, quiet=True, probe=tag + 1)

    def _cancel_all(self, native: IsolateHandle) -> None:
        for tag in [*self._quiet_in_flight, *self._in_flight]:
            native.cancel(tag)

    def start(
        self,
        listener: EngineListener,
        *,
        source: str,
        tools: list[dict[str, str]],
        stored_json: str,
        seed: int | None = None,
    ) -> None:
        """Run ``source``. ``tools`` lists ``{"ident", "description", "kind"}``;
        ``stored_json`` is the JSON text of the object ``key -> JSON text of the value``
        (the session keeps it ready, so starting a cell never re-encodes stored values).

        ``seed`` (``0 <= seed < 2 ** 32``) seeds the program's ``Math.random`` (default:
        a fresh random one). It travels in the start command, which the journal keeps,
        so a replay draws the same numbers (see ``journal.py`` and ``js/clock.js``)."""
        self._listener = listener
        self._source = source
        self._tool_kinds = {tool["ident"]: tool["kind"] for tool in tools}
        self._validator = self._new_validator()
        # Math.random's seed: part of the start command, so a replay draws the same.
        if seed is None:
            seed = random.getrandbits(32)
        settings = _start_settings(self._config) + ',"seed":' + str(int(seed) & 0xFFFFFFFF)
        # The module syntax a function body does not take (see _module_source.py);
        # every character stays where it was, so syntax errors keep their positions.
        module = module_source(source)
        if module.import_error is not None:
            settings += ',"import_error":' + dumps(module.import_error)
        if module.hidden_parameters:
            settings += ',"hidden":true'
        head = ('{"t":"start","source":', dumps(module.body), ',"tools":', dumps(tools))
        # One join, one copy of the stored values (megabytes, maybe): `+` made one each.
        self._send_text("".join((*head, settings, ',"stored":', stored_json, "}")))

    def interrupt(self) -> None:
        """Interrupt the program now (even ``while (true) {}``); :meth:`terminate`
        then waits for the isolate to confirm. Synchronous, so that whoever asks for
        the termination reaches V8 without waiting for the cell's task to run."""
        interrupted = bool(self._in_flight or self._quiet_in_flight)
        if self._interrupt():
            self._unconfirmed = True
            if interrupted:
                self._drained = trio.Event()  # set by the first report from now on

    async def terminate(self) -> None:
        """Interrupt the program (see :meth:`interrupt`), then give the isolate a
        moment to hand over output it had queued.

        Every report of an evaluation says whether the runtime's queue may still hold
        output (:data:`QUEUED`), read when the JavaScript had stopped. The drain (one
        more evaluation and report) is posted only when it may: so terminating a
        program that printed nothing since its last flush waits for one report, the
        first one of an evaluation it interrupted (any other cancelled evaluation
        behind it is skipped, without running JavaScript)."""
        self.interrupt()
        if not self._unconfirmed:
            return
        self._unconfirmed = False
        with trio.move_on_after(DRAIN_TIMEOUT):
            if self._drained is not None:
                await self._drained.wait()
            if not self._clean and self._native is not None and not self._closed:
                # (No native handle: the isolate's worker died meanwhile, see on_crash.)
                self._drained = trio.Event()
                self._drain_tag = self._post(DRAIN)
                await self._drained.wait()

    def stop(self) -> None:
        """The program finished: interrupt anything it left running (a program may
        spin after ``exit()``) and ignore whatever it reports from now on."""
        self._interrupt()

    def _interrupt(self) -> bool:
        """Cancel every evaluation in flight and stop sending commands, once; False
        when there is nothing (left) to interrupt."""
        if self._recovery is not None:
            # A replay being set up: nothing runs yet, so nothing is left to interrupt.
            self._recovery.cancel()
            self._recovery = None
            self._terminating = True
            self._outbox.clear()
            return False
        native = self._native
        if native is None or self._closed or self._terminating:
            return False
        self._terminating = True
        self._outbox.clear()
        self._quieter()
        self._cancel_all(native)
        return True

    async def close(self) -> None:
        """Free the isolate (stops any JavaScript still running, joins its thread)."""
        native, self._native = self._native, None
        self._closed = True
        self._quieter()
        if self._gate is not None:
            self._gate.close()
        if self._recovery is not None:
            self._recovery.cancel()
            self._recovery = None
        if native is not None:
            await native.close()

    def collect_output(self) -> None:
        """Have output the isolate keeps back while its program runs reported now
        (``thread`` mode; a worker process keeps none back): a yield window that ends
        while the program spins carries what it printed. Reports may reach the
        listener from inside this call."""
        native = self._native
        if native is not None and not self._closed:
            native.collect_output()

    @property
    def idle(self) -> bool:
        """No command is queued or being processed: the program is waiting."""
        return (
            not self._in_flight
            and not self._outbox
            and self._recovery is None
            and not (self._gate is not None and self._gate.holding)
        )

    # -- commands ------------------------------------------------------------------

    def send_tool_result(self, call_id: str, value_json: str) -> None:
        """Resolve ``call_id`` with a value already encoded as JSON text (encoded once,
        by the caller that also checked it)."""
        self._send_text(
            '{"t":"result","id":' + json.dumps(call_id) + ',"ok":true,"value":' + value_json + "}"
        )
        self._answered(call_id)

    def send_tool_error(self, call_id: str, message: str) -> None:
        self._send({"t": "result", "id": call_id, "ok": False, "message": message})
        self._answered(call_id)

    def send_timer_fired(self, timer_id: int) -> None:
        self._send_text('{"t":"fire","id":' + str(int(timer_id)) + "}")

    def _send(self, command: dict[str, Any]) -> None:
        self._send_text(dumps(command))

    def _send_text(self, command: str) -> None:
        if self._closed or self._terminating or self._failed:
            return
        self._outbox.append(command)
        if self._recovery is not None:
            return  # posted behind the replay, once the new isolate is there
        if len(self._in_flight) < MAX_POSTS_IN_FLIGHT:
            self._post_outbox()
        # Otherwise the batch grows until a probe in flight ends (see _on_task):
        # commands arriving meanwhile, e.g. many parallel tool results, travel together.
        # The isolate runs requests in order, so one posted behind another in flight
        # changes nothing but when it arrives.

    def _post_outbox(self) -> None:
        native = self._native
        if not self._outbox or native is None or self._terminating or self._failed:
            self._outbox.clear()
            self._quieter()
            return
        if self._gate is not None and self._gate.holding:
            return  # goes once what is held has gone (_post_durable), with what came since
        # "[" + ",".join(...) + "]" in one copy (a start command may hold megabytes).
        parts = ["["]
        for command in self._outbox:
            parts += (command, ",")
        parts[-1] = "]"
        batch = _escape_lone_surrogates("".join(parts))
        self._outbox.clear()
        self._quieter()
        if self._journal is not None:
            self._journal.posted(batch)
        # The command's success is implied by the probe's, which the isolate runs
        # next, after draining microtasks: one report per batch instead of two.
        if self._gate is None:
            self._post_with_probe(batch)
            return
        sequence = self._batches_posted
        self._batches_posted += 1
        self._gate.after_durable(functools.partial(self._post_durable, batch, sequence))

    def _post_durable(self, batch: str, sequence: int) -> None:
        """Post a batch held until its journal record was durable (resume.py); not if
        a replay posted it meanwhile, or there is nothing to post it to any more."""
        if sequence < self._replay_horizon or self._recovery is not None:
            return
        if self._native is None or self._closed or self._terminating or self._failed:
            return
        self._post_with_probe(batch)

    # -- IsolateSink: reports from the isolate (on the trio thread) ----------------

    def on_batch(self, text: str | None) -> None:
        if self._backlog:
            self._queue_report(("batch", text))
        elif text is None or self._nursery is None or decode_inline(text):
            self._on_batch(text, inline=True)
        else:
            self._queue_report(("batch", text))

    def on_task(self, tag: int, outcome: Outcome, detail: str) -> None:
        if self._backlog:
            self._queue_report(("task", tag, outcome, detail))
        else:
            self._on_task(tag, outcome, detail)

    def evaluating(self) -> bool:
        return bool(self._in_flight or self._quiet_in_flight)

    def on_crash(self, message: str) -> None:
        if self._backlog:
            self._queue_report(("crash", message))
        else:
            self._on_crash(message)

    def _on_crash(self, message: str) -> None:
        running = self.evaluating()
        self._in_flight.clear()
        self._quiet_in_flight.clear()
        if self._drained is not None:
            self._drained.set()
        if not (self._closed or self._terminating or self._failed):
            if self._can_replay(running):
                self._native = None
                self._replay(message, alone=running)
                return
            self._fail(message)
        self._native = None  # nothing left to cancel or close

    def _new_validator(self) -> MessageValidator:
        return MessageValidator(
            tool_kinds=self._tool_kinds,
            max_json_depth=self._config.max_json_depth,
            max_host_bytes=self._config.max_tool_input_bytes,
        )

    def _wants_batch(self) -> bool:
        if self._closed or self._listener is None:
            return False
        # After a failure, only the terminate drain's output is wanted.
        return not (self._failed and self._drained is None)

    def _on_batch(self, text: str | None, *, inline: bool | None = None) -> None:
        if not self._wants_batch():
            return
        assert self._validator is not None
        if text is None:
            self._fail(
                "exec cell sent a message larger than the limit of "
                f"{self._config.max_message_chars} characters (RuntimeConfig.max_message_chars)"
            )
            return
        self._act_on_batch(*parse_batch(self._validator, text, inline))

    def _act_on_batch(self, events: list[EngineEvent], violation: ProtocolViolation | None) -> None:
        listener = self._listener
        assert listener is not None
        journal = self._journal
        for event in events:
            if self._closed:
                return
            if isinstance(event, ClockRead):
                if journal is not None:
                    journal.clock(event.values)
                continue
            if self._failed and not isinstance(event, Output):
                continue
            if journal is not None:
                replayed = journal.replayed(event)
                if replayed:
                    continue  # acted on before the worker died
                if replayed is False:
                    self._fail(
                        "exec cell could not be resumed after its worker process died: "
                        "run again, it did not do what it did the first time (a program "
                        "whose behaviour depends on garbage collection, WeakRef or "
                        "FinalizationRegistry cannot be replayed)"
                    )
                    return
            if self._plan is not None or self._gate is not None:
                if not self._act_durably(event):
                    return
                continue
            listener.on_engine_event(event)
        if violation is not None and not self._closed:
            self._fail(f"exec runtime sent an invalid message: {violation}")

    def _on_task(self, tag: int, outcome: Outcome, detail: str) -> None:
        self._in_flight.discard(tag)
        self._quiet_in_flight.discard(tag)
        if outcome == TASK_OK:
            # Every command posted before this probe has run.
            self._quiet_in_flight = {quiet for quiet in self._quiet_in_flight if quiet > tag}
        self._clean = outcome in (TASK_OK, TASK_TERMINATED) and detail != QUEUED
        if self._closed:
            return
        if self._terminating:
            # Awaited by terminate(): the first report after the interrupt (the
            # JavaScript has stopped, and whether it left output queued is known),
            # then, if needed, the drain's.
            if self._drained is not None and self._drain_tag in (-1, tag):
                self._drained.set()
            return
        if self._failed:
            return
        if outcome == TASK_OOM:
            self._fail(
                f"exec cell exceeded its memory limit of {self._config.memory_limit_bytes} "
                "bytes (RuntimeConfig.memory_limit_bytes)"
            )
            return
        if outcome == TASK_ERROR:
            # The one error the runtime lets out on purpose: V8's report of where the
            # program's syntax error is (see _syntax_error.py). It ends the program.
            error_text = syntax_error_text(detail, self._source)
            if error_text is not None and self._listener is not None:
                self._listener.on_engine_event(Finished(error_text, {}))
                return
            self._fail(f"exec runtime failed: {detail}")
            return
        if outcome == TASK_TERMINATED:
            self._fail("exec runtime ended unexpectedly")
            return
        assert outcome == TASK_OK
        if tag == self._replay_tag:
            self._replay_tag = -1  # every batch of the replay has run
            self._plan = None  # and what it reports from now on is new
        self._after_post()

    def _after_post(self) -> None:
        if self._closed or self._failed or self._terminating:
            return
        if self._outbox and len(self._in_flight) < MAX_POSTS_IN_FLIGHT:
            self._post_outbox()
        elif self.idle and self._replay_tag < 0 and self._listener is not None:
            self._listener.on_engine_idle()

    def _fail(self, message: str) -> None:
        self._failed = True
        self._outbox.clear()
        self._quieter()
        if self._gate is not None:
            self._gate.close()
        if self._native is not None:
            self._cancel_all(self._native)
        if self._listener is not None:
            self._listener.on_engine_failure(message)
