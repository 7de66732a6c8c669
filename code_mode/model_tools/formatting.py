"""Turning a cell event into the content items an ``exec``/``wait`` call returns.

Every result has the same shape, so a model can read any of them the same way::

    Script running with cell ID 3        <- or Script completed / failed / terminated
    Wall time 10.0 seconds
    Output:
    <the program's text, image and audio items, cut to the token budget>
    Script error:                        <- only when the program failed
    <error text>

The status lines are exact strings of the reference implementation; models trained
on them know that ``Script running with cell ID <id>`` means "call ``wait`` with that id".

Token budget
------------
The output is cut to the budget by :func:`~.truncation.truncate_output`, which keeps
its head and tail and says what it removed (see :mod:`.truncation`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from .._types import (
    CellEvent,
    Completed,
    OutputItem,
    Pending,
    Terminated,
    Text,
    Yielded,
)
from .pragma import DEFAULT_MAX_OUTPUT_TOKENS
from .truncation import IMAGE_TOKEN_COST, estimate_tokens, truncate_output

__all__ = [
    "FAILED",
    "IMAGE_TOKEN_COST",
    "PUSH_RUNNING_NOTE",
    "estimate_tokens",
    "format_result",
    "is_error_result",
    "push_preamble",
    "result_header",
    "result_status",
    "result_succeeded",
    "running_cell_id",
    "truncate_output",
]

RUNNING: Final = "Script running with cell ID "
"""The start of the status line of a running result, before the cell's ID."""
FAILED: Final = "Script failed"
"""The status line of a failed result (see :func:`result_status`)."""

PUSH_RUNNING_NOTE: Final = (
    "The program is still running. You will be given its result when it finishes, so do "
    "not call `wait` to poll for it: end your turn or carry on with other work. (`wait` "
    "with this cell ID shows its output sooner; `terminate: true` stops it.)"
)
"""The last item of a ``Script running`` result when the host pushes results
(``format_result(..., push=True)``): the header stays the reference's, which models
know, and this tells the model what changes."""


def push_preamble(cell_id: str) -> str:
    """The line that introduces a pushed result in a message to the model: a
    ``Script completed`` header does not say which program it was."""
    return f"The program in cell {well_formed(cell_id)} has finished; its result follows.\n"


def well_formed(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD.

    JavaScript strings, and so program output, error texts and whatever the model's
    arguments echo back, may hold lone surrogates, which no UTF-8 API (nor this
    module's byte counts) can carry."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def result_status(result: CellEvent | str, cell_id: str) -> str:
    """The first line of a result: ``Script running with cell ID <id>`` for a cell that
    is still running (``Yielded``/``Pending``), ``Script completed``, ``Script failed``
    (a ``Completed`` with an ``error_text``, or a ``str`` error such as a missing
    cell) or ``Script terminated``."""
    if isinstance(result, Yielded | Pending):
        return f"{RUNNING}{cell_id}"
    if isinstance(result, Terminated):
        return "Script terminated"
    if isinstance(result, Completed) and result.error_text is None:
        return "Script completed"
    return FAILED


def result_succeeded(result: CellEvent | str) -> bool:
    """Whether a host should report the tool call as successful (e.g. MCP ``isError``
    false). A running or terminated cell is a success of the *tool call*; only a
    program that threw, or a call that could not be served (a ``str`` error), fails."""
    if isinstance(result, str):
        return False
    return not (isinstance(result, Completed) and result.error_text is not None)


def is_error_result(items: Sequence[OutputItem]) -> bool:
    """Whether formatted result items (of ``CodeModeSession.exec``/``wait``/
    ``handle_call``, or :func:`format_result`) are a failure: their header says
    ``Script failed`` (the program threw, or the call could not be served), exactly
    when :func:`result_succeeded` was false for the event they were made from. Use it
    for the ``is_error`` flag of Anthropic and MCP results."""
    return bool(items) and isinstance(items[0], Text) and items[0].text.startswith(FAILED + "\n")


def running_cell_id(items: Sequence[OutputItem]) -> str | None:
    """The cell ID of formatted result items whose header says ``Script running with
    cell ID <id>``, else ``None`` (the program ended, or the call failed)."""
    if not items or not isinstance(items[0], Text):
        return None
    status = items[0].text.partition("\n")[0]
    return status.removeprefix(RUNNING) if status.startswith(RUNNING) else None


def result_header(status: str, wall_time: float, code_mode_time: float | None = None) -> str:
    """The header text item: ``<status>\\nWall time <s.s> seconds\\nOutput:\\n``, with the
    wall time in seconds to one decimal (the model uses it to pick ``yield_time_ms``).

    With ``code_mode_time`` (the seconds the session runtime spent on the call), the
    reference's timing line instead (openai/codex #46288): ``Wall time 1.250 seconds
    (code-mode 0.750 seconds; overhead 0.500 seconds)``, three decimals, the overhead
    being the difference (negative when rounding makes it so)."""
    if code_mode_time is None:
        return f"{status}\nWall time {wall_time:.1f} seconds\nOutput:\n"
    return (
        f"{status}\nWall time {wall_time:.3f} seconds (code-mode {code_mode_time:.3f} "
        f"seconds; overhead {wall_time - code_mode_time:.3f} seconds)\nOutput:\n"
    )


def format_result(
    result: CellEvent | str,
    *,
    wall_time: float,
    cell_id: str,
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
    push: bool = False,
    code_mode_time: float | None = None,
    notes: Sequence[str] = (),
) -> list[OutputItem]:
    """Format an ``exec`` or ``wait`` result as the content items to give the model.
    (``code_mode_time``: see :func:`result_header`.)

    ``result`` is the cell event, or an error text for a call that reached no cell
    (``wait`` on an unknown or finished cell: pass ``str(MissingCell(...))``, i.e.
    ``exec cell <id> not found``), which is formatted as a failed result with no
    output. ``wall_time`` is the seconds since the tool call started, ``cell_id`` the
    cell's id, ``max_output_tokens`` the budget (the pragma's ``max_output_tokens`` or
    ``wait``'s ``max_tokens``).

    The steps follow the reference: a failure first appends ``Script error:\\n<text>``
    to the output (so the error takes part in truncation and, being last, survives it
    as part of the tail), then the output is cut to the budget
    (:func:`truncate_output`), then the header item is put in front (it is never cut).
    An empty ``error_text`` still counts as a failure: ``None`` is the only success.

    ``push=True`` (the host gives the model a program's result when it finishes): a
    running result ends with :data:`PUSH_RUNNING_NOTE`, after the output and outside
    its budget, so the model knows it need not poll. ``notes``: lines a running
    result ends with (before that one), one item each, outside the budget: the calls
    that await the host's approval.
    """
    items: list[OutputItem] = [] if isinstance(result, str) else list(result.content_items)
    items = [Text(well_formed(item.text)) if isinstance(item, Text) else item for item in items]
    error_text = result if isinstance(result, str) else None
    if isinstance(result, Completed):
        error_text = result.error_text
    if error_text is not None:
        error_text = well_formed(error_text)
    cell_id = well_formed(cell_id)
    if error_text is not None:
        items.append(Text(f"Script error:\n{error_text}"))
    header = Text(result_header(result_status(result, cell_id), wall_time, code_mode_time))
    formatted = [header, *truncate_output(items, max_output_tokens)]
    if isinstance(result, Yielded | Pending):
        formatted.extend(Text(note) for note in notes)
    if push and isinstance(result, Yielded | Pending):
        formatted.append(Text(PUSH_RUNNING_NOTE))
    return formatted
