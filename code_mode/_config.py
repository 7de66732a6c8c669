"""`RuntimeConfig`: every limit and default of the runtime, in one frozen object."""

from __future__ import annotations

from typing import Literal

import attrs

from ._validators import non_negative, positive

MiB = 1024 * 1024


@attrs.frozen(kw_only=True)
class RuntimeConfig:
    """Limits and defaults of a :class:`~code_mode.SessionRuntime`.

    Every field has a default chosen for LLM-written programs on a shared host. A cell
    that breaks a limit ends (only that cell) with an ``error_text`` naming the limit
    and its value; the session and the process carry on.
    """

    memory_limit_bytes: int = attrs.field(default=256 * MiB, validator=positive)
    """Memory limit per cell (default 256 MiB), applied twice: to the V8 heap, and
    separately to ArrayBuffer memory (the backing stores of typed arrays, which live
    outside the heap) together with an estimate of the ICU memory of live ``Intl``
    objects. V8's own heap limit is set at one and a half times it; when a garbage
    collection finds the heap above the limit, or one built-in call would go over it
    (a ``split``, a ``fill`` or ``Array.from`` of more than ``min(2**24, limit / 16)``
    elements, a string longer than the limit, ``Function``/``eval`` source over 1/32 of
    it, a ``RegExp`` pattern over 1/128), the program is stopped and the cell fails with
    ``exec cell exceeded its memory limit of <N> bytes (RuntimeConfig.memory_limit_bytes)``;
    when an allocation would take the live ArrayBuffers of the cell above it, the
    allocation is refused and the cell fails with the same text followed by
    `` in ArrayBuffer memory``. Buffers of 64 bytes or less are not counted (small typed
    arrays live on the heap); a resizable buffer counts its ``maxByteLength``. A dropped
    buffer stops counting once the program has waited for the host (a tool call, a timer)
    since it dropped it: a program that churns through more than the limit without ever
    waiting fails. See ``docs/security.md``."""

    callback_grace: float = attrs.field(default=0.1, validator=non_negative)
    """Seconds an in-flight tool call or notification gets to honour cancellation when
    its cell ends before the runtime stops waiting for it (default 0.1 s, as the
    reference)."""

    max_output_bytes: int = attrs.field(default=64 * MiB, validator=positive)
    """Output a cell may buffer (UTF-8 bytes of text plus image URLs) between two
    delivered events (default 64 MiB)."""

    max_error_text_bytes: int = attrs.field(default=16 * 1024, validator=positive)
    """Longest ``error_text`` kept (default 16 KiB); longer ones are cut and end with
    ``\\n[code mode error truncated]``."""

    max_stored_entries: int = attrs.field(default=256, validator=positive)
    """Keys a session's stored values may hold (default 256)."""

    max_stored_chars: int = attrs.field(default=8 * MiB, validator=positive)
    """Total size of a session's stored values, keys included, as JSON text in UTF-16
    code units, as the isolate counts a string's length (default 8 Mi)."""

    max_outstanding_tool_calls: int = attrs.field(default=128, validator=positive)
    """Nested tool calls one cell may have in flight at once (default 128)."""

    max_pending_timers: int = attrs.field(default=1024, validator=positive)
    """Timers one cell may have pending at once (default 1024)."""

    max_source_bytes: int = attrs.field(default=1 * MiB, validator=positive)
    """Largest program source accepted, in UTF-8 bytes (default 1 MiB)."""

    max_json_depth: int = attrs.field(default=128, validator=positive)
    """Deepest nesting of JSON crossing the bridge (tool input, stored values; default
    128, as the reference)."""

    max_message_chars: int = attrs.field(default=16 * MiB, validator=positive)
    """Largest single message from an isolate to the host, e.g. one tool input or one
    text item, in UTF-16 code units (JavaScript string length; default 16 Mi)."""

    max_tool_input_bytes: int = attrs.field(default=16 * MiB, validator=positive)
    """Host memory the inputs of one cell's tool calls in flight may hold, counted as
    the Python objects they are on the host, not as their JSON text (default 16 MiB):
    an input of empty objects or arrays takes twenty to fifty times its text's size
    as Python objects. A call that would take the cell's inputs over it ends the cell
    with ``exec cell exceeded its limit of <N> bytes of tool inputs in flight
    (RuntimeConfig.max_tool_input_bytes)``. It also bounds decoding: a batch of messages
    from the isolate whose decoding would build more than this many bytes of Python
    objects beyond its strings' characters is refused while it is decoded, before the
    objects exist (``exec runtime sent an invalid message: a message batch would take
    more than <N> bytes on the host ...``). Large batches are decoded on a thread, in
    steps that let the trio thread run (see ``docs/security.md``)."""

    max_notification_bytes: int = attrs.field(default=16 * MiB, validator=positive)
    """Host memory the notifications (``notify(...)``) of one cell that the delegate
    has not finished handling may hold, their texts counted as the ``str`` objects they
    are (default 16 MiB; ``max_pending_notifications`` counts them). A breach ends the
    cell with ``exec cell exceeded its limit of <N> bytes of pending notifications
    (RuntimeConfig.max_notification_bytes)``."""

    isolation: Literal["process", "thread"] | None = attrs.field(
        default=None, validator=attrs.validators.in_((None, "process", "thread"))
    )
    """Where this session's isolates must run: ``"process"`` (worker processes, which
    contain even a fatal V8 failure) or ``"thread"`` (threads of the host process:
    lowest latency, for trusted code only, since such a failure ends the whole
    process); see ``docs/security.md``. ``None`` (the default) takes the engine's: a
    session given no engine then uses the trio run's default ``"process"`` engine. A
    session that names a mode gets an engine of that mode, never another: the default
    engine for it, or an error if the engine it was given runs the other mode. How
    isolates are hosted (worker processes, warm isolates, recycling) is the engine's
    business: see :class:`~code_mode.EngineConfig`."""

    allow_remote_image_urls: bool = False
    """Whether ``image()`` (and ``generatedImage()``, ``forward_output()``) accept
    ``http(s)://`` URLs too. Off by default, as in the reference: images are ``data:``
    URLs only, and a remote one fails with ``Tool call failed: remote image URLs are not
    supported in tool outputs. Pass a base64 data URI instead``. Turn it on for hosts
    whose model API fetches image URLs itself."""

    max_output_items: int = attrs.field(default=100_000, validator=positive)
    """Output items (each ``text``, ``image``, ``console.log`` call) a cell may buffer
    between two delivered events (default 100 000). ``max_output_bytes`` counts only
    the text and URLs, so empty items (``text("")``, ``console.log()``) would otherwise
    be free while each still costs the host about a hundred bytes; at the defaults,
    buffered items cost the host well under ``max_output_bytes``. A breach ends the cell
    with ``exec cell exceeded its limit of <N> buffered output items
    (RuntimeConfig.max_output_items)``."""

    max_pending_notifications: int = attrs.field(default=10_000, validator=positive)
    """Notifications (``notify(...)``) of one cell that the delegate has not finished
    handling yet, waiting ones included (default 10 000). At most 16 of them are with
    the delegate at once; the rest wait their turn, at a few dozen bytes plus their text
    each. A breach ends the cell with ``exec cell exceeded its limit of <N> pending
    notifications (RuntimeConfig.max_pending_notifications)``."""

    max_cell_seconds: float = attrs.field(default=3600.0, validator=positive)
    """Longest a cell may run, in wall-clock seconds from its start (default one hour),
    whether it computes, waits for tools or sleeps on timers; a completed cell whose
    result is not collected yet no longer counts. So a cell nobody terminates cannot
    spin forever. A breach ends the cell with ``exec cell exceeded its running-time
    limit of <N> seconds (RuntimeConfig.max_cell_seconds)``; output produced until then
    is kept, stored writes are dropped."""

    max_journal_chars: int = attrs.field(default=64 * MiB, validator=non_negative)
    """Most characters a cell's journal may hold (default 64 Mi): every batch of
    commands posted to its isolate (its source, stored values, each tool result), its
    clock readings (24 each) and its events (8 each). With it, a cell whose worker
    process dies while it waits is replayed on another worker instead of failing (see
    ``docs/runtime.md``, "Cells that survive their worker"). A cell whose journal
    passes the limit stops recording and is not replayed; ``0`` turns replay off.
    Process isolation only: in thread isolation a fatal V8 failure ends the host."""
