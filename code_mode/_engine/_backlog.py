"""Reports of one isolate that wait behind a large batch being decoded in slices.

A batch that ``_decode.decode_inline`` leaves to slices is decoded a slice at a time
on the trio thread (see ``_decode.py`` and ``_slices.py``), while every other task goes
on between the slices; the isolate's reports that arrive meanwhile (later batches, the
ends of evaluations, its worker's death) wait behind it and are acted on in the order
they came. This is the part of
:class:`~.isolate.Isolate` that does it (a mixin, as ``_cell/ending.py`` is the
cell's): the isolate's ``on_batch``, ``on_task`` and ``on_crash`` queue a report here
whenever the backlog is not empty.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import trio

from .._config import RuntimeConfig
from .._v8 import Outcome
from ._bridge import EngineEvent, MessageValidator, Output, ProtocolViolation
from ._decode import INLINE_BATCH_CHARS, Steps, finish
from ._slices import in_slices

#: Characters of batches one isolate may have waiting while an earlier one is decoded
#: in slices, in multiples of ``RuntimeConfig.max_message_chars``: an isolate sends
#: faster than the host decodes only when its batches are built to be slow to decode.
MAX_BACKLOG_MESSAGES = 4


def parse_batch(
    validator: MessageValidator, text: str, inline: bool | None = None
) -> tuple[list[EngineEvent], ProtocolViolation | None]:
    """:func:`parse_batch_steps` run to its end in one go."""
    return finish(parse_batch_steps(validator, text, inline))


def parse_batch_steps(
    validator: MessageValidator, text: str, inline: bool | None = None
) -> Steps[tuple[list[EngineEvent], ProtocolViolation | None]]:
    """A batch's events, and the violation that cut it short if any: of a batch with a
    bad message in it, only the output before that message counts (the program printed
    it, and output has no effect on the host). Nothing else of the batch is acted on (a
    forged tool call beside a valid one must not run). In steps, for a large batch."""
    try:
        return (yield from validator.parse_batch_steps(text, inline=inline)), None
    except ProtocolViolation as error:
        return [event for event in error.events_before if isinstance(event, Output)], error


class ReportBacklog:
    """The backlog of :class:`~.isolate.Isolate` (see the module's docstring)."""

    _config: RuntimeConfig
    _nursery: trio.Nursery | None
    _validator: MessageValidator | None
    _failed: bool
    _backlog: deque[tuple[Any, ...]]
    _backlog_chars: int

    def _wants_batch(self) -> bool:
        raise NotImplementedError  # pragma: no cover - the isolate's

    def _on_batch(self, text: str | None, *, inline: bool | None = None) -> None:
        raise NotImplementedError  # pragma: no cover - the isolate's

    def _on_task(self, tag: int, outcome: Outcome, detail: str) -> None:
        raise NotImplementedError  # pragma: no cover - the isolate's

    def _on_crash(self, message: str) -> None:
        raise NotImplementedError  # pragma: no cover - the isolate's

    def _act_on_batch(self, events: list[EngineEvent], violation: ProtocolViolation | None) -> None:
        raise NotImplementedError  # pragma: no cover - the isolate's

    def _fail(self, message: str) -> None:
        raise NotImplementedError  # pragma: no cover - the isolate's

    def _queue_report(self, report: tuple[Any, ...]) -> None:
        """Keep ``report`` behind the batch being decoded in slices (reports are acted
        on in the order they came), within :data:`MAX_BACKLOG_MESSAGES`."""
        if report[0] == "batch":
            if not self._wants_batch():
                return
            self._backlog_chars += len(report[1] or "")
            limit = MAX_BACKLOG_MESSAGES * self._config.max_message_chars
            if self._backlog_chars > limit and not self._failed:
                # Only reports of tasks and of a crash stay (they keep the isolate's
                # bookkeeping), and the batch being decoded.
                kept = [r for i, r in enumerate(self._backlog) if i == 0 or r[0] != "batch"]
                self._backlog = deque(kept)
                self._backlog_chars = sum(len(r[1] or "") for r in kept if r[0] == "batch")
                self._fail(
                    "exec cell sent messages faster than the host could decode them: more "
                    f"than {limit} characters waiting ({MAX_BACKLOG_MESSAGES} times "
                    "RuntimeConfig.max_message_chars)"
                )
                return
        self._backlog.append(report)
        if len(self._backlog) == 1:
            assert self._nursery is not None
            self._nursery.start_soon(self._work_backlog)

    @trio.lowlevel.enable_ki_protection
    async def _work_backlog(self) -> None:
        """Act on the backlog's reports in order, decoding each large batch in slices
        (see ``_slices.py``) while the other tasks go on between them."""
        backlog = self._backlog
        try:
            while backlog:
                report = backlog[0]
                if report[0] == "task":
                    backlog.popleft()
                    self._on_task(*report[1:])
                    continue
                if report[0] == "crash":
                    backlog.popleft()
                    self._on_crash(report[1])
                    continue
                text = report[1]
                validator = self._validator
                if text is None or validator is None or len(text) <= INLINE_BATCH_CHARS:
                    backlog.popleft()
                    self._backlog_chars -= len(text or "")
                    self._on_batch(text)
                    continue
                parsed = None
                if self._wants_batch():
                    parsed = await in_slices(parse_batch_steps(validator, text))
                if backlog and backlog[0] is report:
                    backlog.popleft()
                    self._backlog_chars -= len(text)
                # (A replay replaces the validator: a batch of the dead isolate is moot.)
                if parsed is not None and validator is self._validator and self._wants_batch():
                    self._act_on_batch(*parsed)
        finally:
            if backlog is self._backlog and backlog:
                # Cancelled (the session ends): nothing waits for these any more.
                backlog.clear()
                self._backlog_chars = 0
