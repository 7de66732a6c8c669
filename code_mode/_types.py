"""Value types of the public API: identifiers, observe modes, output, events, tools.

Everything here is plain data: frozen ``attrs`` classes compared by value. Lists are
kept as lists (not tuples) so that an event compares equal to one written by hand with
list literals, e.g. ``Completed(content_items=[Text("done")], error_text=None)``. Such
instances are therefore not hashable, which no caller needs.
"""

from __future__ import annotations

import enum
from typing import Any, NewType, TypeAlias

import attrs

from ._validators import non_negative

JSON: TypeAlias = Any
"""JSON data as produced by :func:`json.loads`: dict, list, str, int, float, bool, None."""

CellId = NewType("CellId", str)
"""Identifier of a cell. A session allocates ``"1"``, ``"2"``, ... in ``execute`` order."""


@attrs.frozen
class YieldAfter:
    """Observe until ``seconds`` have passed, the script calls ``yield_control()``, or the
    cell ends, whichever comes first.

    The timer counts from the moment the isolate starts running the program (or from
    when the observation attaches, if the program is already running), so V8 start-up
    never eats into the window.

    ``idle_floor`` (seconds, counted the same way; ``None`` for none) is for hosts whose
    model should not come back for nothing: when ``seconds`` pass and the program has
    output nothing new, the observation holds on until it outputs something (handed
    over with whatever else it output in the same breath), ends, or ``idle_floor``
    passes. A floor no longer than ``seconds`` changes nothing.
    """

    seconds: float = attrs.field(validator=non_negative)
    idle_floor: float | None = attrs.field(
        default=None, validator=attrs.validators.optional(non_negative), kw_only=True
    )


@attrs.frozen
class PendingFrontier:
    """Observe until the script is blocked on the outside world (a *pending frontier*:
    all delivered input processed, microtasks drained, waiting on tool calls or timers)
    or the cell ends. There is no timer."""


@attrs.frozen
class StepToFrontier:
    """Observe until the next pending frontier, as :class:`PendingFrontier` does, then
    *hold* the cell there: tool results and timer firings that come meanwhile are not
    given to the program until the next observation, which resumes it (a
    ``StepToFrontier`` one runs it to the frontier after, a ``YieldAfter`` one lets it
    run on). The reference's pause-until-resumed mode (``execute_to_pending`` /
    ``wait_to_pending``), for hosts that replay or step programs deterministically.

    The ``Pending`` it resolves with lists the tool calls the program started since its
    previous frontier (not every one still outstanding). A held cell still counts
    against ``RuntimeConfig.max_cell_seconds``, and ``terminate`` stops it as usual."""


ObserveMode: TypeAlias = YieldAfter | PendingFrontier | StepToFrontier


class ImageDetail(enum.Enum):
    """How much detail the model should spend on an image."""

    AUTO = "auto"
    LOW = "low"
    HIGH = "high"
    ORIGINAL = "original"


@attrs.frozen
class Text:
    """A text output item."""

    text: str


@attrs.frozen
class Image:
    """An image output item: a ``data:`` URL (or, with
    ``RuntimeConfig.allow_remote_image_urls``, an ``http(s)://`` one) and its detail."""

    image_url: str
    detail: ImageDetail | None = None


@attrs.frozen
class Audio:
    """An audio output item (``audio(...)`` in a program): always a ``data:`` URL, for
    example ``data:audio/wav;base64,...``. Hosts pass it on as their API allows (see
    ``code_mode.model_tools.adapters``)."""

    audio_url: str


OutputItem: TypeAlias = Text | Image | Audio


@attrs.frozen
class Yielded:
    """The cell is still running; here is its output since the previous event."""

    content_items: list[OutputItem]


@attrs.frozen
class Pending:
    """The cell reached a pending frontier; ``pending_tool_call_ids`` are the nested tool
    calls still outstanding at that moment."""

    content_items: list[OutputItem]
    pending_tool_call_ids: list[str]


@attrs.frozen
class Completed:
    """The program finished. ``error_text`` is ``None`` on success, else what it threw."""

    content_items: list[OutputItem]
    error_text: str | None = None


@attrs.frozen
class Terminated:
    """The cell was stopped (``terminate``, shutdown, or leaving the session block)."""

    content_items: list[OutputItem]


CellEvent: TypeAlias = Yielded | Pending | Completed | Terminated


class ToolKind(enum.Enum):
    """How a nested tool takes its input."""

    FUNCTION = "function"
    """Takes a JSON object (missing input is ``{}``)."""
    FREEFORM = "freeform"
    """Takes a string."""


@attrs.frozen
class ToolName:
    """The host's name for a tool, optionally inside a namespace (e.g. an MCP server)."""

    name: str
    namespace: str | None = None

    def display(self) -> str:
        """The name as shown in messages: ``namespace.name`` or the bare name."""
        return self.name if self.namespace is None else f"{self.namespace}.{self.name}"


@attrs.frozen
class ToolDefinition:
    """A nested tool a program may call as ``tools.<identifier>(input)``.

    ``name`` is the raw name; the JavaScript identifier is derived from it (characters
    other than ``_``, ``$``, ASCII letters and, not first, digits become ``_``).
    """

    name: str
    tool_name: ToolName
    description: str
    kind: ToolKind
    input_schema: dict[str, Any] | None = None
    output_schema: dict[str, Any] | None = None
    idempotent: bool = attrs.field(default=True, kw_only=True)
    """Whether a call may run twice with the same effect. A call in flight when the
    server running its cell died runs again when another server resumes the cell
    (stateless MCP); a tool that says ``False`` is never run twice: such a cell then
    fails with a clear message instead."""
    input_schema_max_bytes: int | None = attrs.field(default=None, kw_only=True)
    """How long the rendered TypeScript of ``input_schema`` may be before the ``exec``
    description shows ``unknown`` instead: the larger of this and 16 000 (the
    reference's ``input_schema_max_bytes``; an MCP server's
    ``tool_input_schema_max_bytes`` sets it for its tools, a session's
    ``input_schema_max_bytes`` for all of them)."""


@attrs.frozen
class NestedToolCall:
    """One ``tools.x(...)`` call made by a program, as handed to the delegate."""

    cell_id: CellId
    runtime_tool_call_id: str
    tool_name: ToolName
    tool_kind: ToolKind
    input: JSON | None
