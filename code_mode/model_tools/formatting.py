"""Turning a cell event into the content items an ``exec``/``wait`` call returns.

Every result has the same shape, so a model can read any of them the same way::

    Script running with cell ID 3        <- or Script completed / failed / terminated
    Wall time 10.0 seconds
    Output:
    <the program's text and image items, cut to the token budget>
    Script error:                        <- only when the program failed
    <error text>

The status lines are exact strings of the reference implementation; models trained
on them know that ``Script running with cell ID <id>`` means "call ``wait`` with that id".

Token budget
------------
Tokens are estimated, not counted: ``ceil(utf8_bytes / 4)`` for text (close enough for
English and code, and it needs no tokenizer) and a flat :data:`IMAGE_TOKEN_COST` for an
image. Output whose estimate fits the budget is returned unchanged. Otherwise the
middle is cut, because the beginning of an output (what the program set out to do) and
its end (the final answer, or the error) are the parts a model needs most:

* **only text**: the items are joined with ``\\n`` into one text, which becomes
  ``Total output lines: <N>``, a blank line, then the head and the tail of the text
  with ``…<N> tokens truncated…`` in between. Cuts fall on UTF-8 character boundaries
  and, when a line break is near, on line boundaries (the marker then gets a line of
  its own).
* **text and images**: items are kept whole from the front until half the budget is
  used, then from the back with what is left; the text item where an end runs out of
  budget is cut (head or tail part kept). Images are never cut. The image where the
  head runs out of its half is still kept if it fits the whole budget (the head then
  ends there and the tail gets what is left), so one large image is not lost to a
  50/50 split; any other image that does not fit what remains is dropped. One text item
  between the two ends says what was removed: ``…<N> tokens truncated…``,
  ``…<k> images omitted…`` or ``…<N> tokens truncated, <k> images omitted…``.

The fixed parts (the ``Total output lines`` line and the marker) always appear, so a
budget smaller than they are (e.g. ``max_output_tokens: 0``) yields just them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

from .._types import (
    CellEvent,
    Completed,
    Image,
    OutputItem,
    Pending,
    Terminated,
    Text,
    Yielded,
)
from .pragma import DEFAULT_MAX_OUTPUT_TOKENS

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
    "truncate_output",
]

FAILED: Final = "Script failed"
"""The status line of a failed result (see :func:`result_status`)."""

IMAGE_TOKEN_COST: Final = 765
"""Estimated tokens of one image. 765 is what OpenAI charges for a 1024x1024 image at
``high`` detail (85 base + 4 tiles x 170): a typical screenshot or chart. The exact
figure depends on the model and the image size, which the host cannot know here; what
matters is that images count, and count as a whole."""


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


def estimate_tokens(text: str) -> int:
    """Estimate the tokens of ``text`` as ``ceil(utf8_bytes / 4)``.

    Byte-based rather than character-based so that non-Latin text, which tokenizers
    split finely, is not under-counted."""
    return math.ceil(len(text.encode("utf-8")) / 4)


def result_status(result: CellEvent | str, cell_id: str) -> str:
    """The first line of a result: ``Script running with cell ID <id>`` for a cell that
    is still running (``Yielded``/``Pending``), ``Script completed``, ``Script failed``
    (a ``Completed`` with an ``error_text``, or a ``str`` error such as a missing
    cell) or ``Script terminated``."""
    if isinstance(result, Yielded | Pending):
        return f"Script running with cell ID {cell_id}"
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


def result_header(status: str, wall_time: float) -> str:
    """The header text item: ``<status>\\nWall time <s.s> seconds\\nOutput:\\n``, with the
    wall time in seconds to one decimal (the model uses it to pick ``yield_time_ms``)."""
    return f"{status}\nWall time {wall_time:.1f} seconds\nOutput:\n"


def format_result(
    result: CellEvent | str,
    *,
    wall_time: float,
    cell_id: str,
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
    push: bool = False,
) -> list[OutputItem]:
    """Format an ``exec`` or ``wait`` result as the content items to give the model.

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
    its budget, so the model knows it need not poll.
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
    header = Text(result_header(result_status(result, cell_id), wall_time))
    formatted = [header, *truncate_output(items, max_output_tokens)]
    if push and isinstance(result, Yielded | Pending):
        formatted.append(Text(PUSH_RUNNING_NOTE))
    return formatted


def truncate_output(items: Sequence[OutputItem], max_tokens: int) -> list[OutputItem]:
    """Cut ``items`` to about ``max_tokens`` estimated tokens, keeping head and tail.

    See the module docstring for the exact rules. Output that fits is returned
    unchanged (as a new list), so the common case costs one pass of byte counting.
    """
    budget = max(0, max_tokens)
    costs = [_cost(item) for item in items]
    if sum(costs) <= budget:
        return list(items)
    texts = [item.text for item in items if isinstance(item, Text)]
    if len(texts) == len(items):
        joined = "\n".join(texts)
        if estimate_tokens(joined) <= budget:
            # Many tiny items: the per-item estimates round up, the whole does not.
            return list(items)
        return [Text(_truncate_all_text(joined, budget))]
    return _truncate_mixed(items, costs, budget)


def _cost(item: OutputItem) -> int:
    return IMAGE_TOKEN_COST if isinstance(item, Image) else estimate_tokens(item.text)


def _count_lines(text: str) -> int:
    """Lines as an editor counts them: a final line break does not open a new line."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def _marker(tokens: int, images: int = 0) -> str:
    parts = []
    if tokens:
        parts.append(f"{tokens} tokens truncated")
    if images:
        parts.append(f"{images} image{'' if images == 1 else 's'} omitted")
    return "…" + ", ".join(parts) + "…"


def _truncate_all_text(text: str, budget: int) -> str:
    preamble = f"Total output lines: {_count_lines(text)}\n\n"
    data = text.encode("utf-8")
    # Reserve room for the largest marker this text can need, plus its line break.
    reserve = len(preamble.encode("utf-8")) + len(_marker(math.ceil(len(data) / 4)).encode()) + 1
    available = max(0, budget * 4 - reserve)
    head = _head(text, available // 2)
    tail = _tail(text, available - available // 2)
    removed = len(data) - len(head.encode("utf-8")) - len(tail.encode("utf-8"))
    head_at_line_end = head == "" or head.endswith("\n")
    tail_at_line_start = tail != "" and text[len(text) - len(tail) - 1] == "\n"
    separator = "\n" if head_at_line_end and tail_at_line_start else ""
    return preamble + head + _marker(math.ceil(removed / 4)) + separator + tail


def _head(text: str, max_bytes: int) -> str:
    """The longest prefix of ``text`` within ``max_bytes`` UTF-8 bytes, shortened to
    end after a line break when one lies in its second half (a whole last line reads
    better than half a line, and costs at most half the allowance)."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    head = data[:max_bytes].decode("utf-8", errors="ignore")
    cut = head.rfind("\n")
    if cut != -1 and cut + 1 >= len(head) // 2:
        head = head[: cut + 1]
    return head


def _tail(text: str, max_bytes: int) -> str:
    """The longest suffix of ``text`` within ``max_bytes`` UTF-8 bytes, shortened to
    start at a line beginning when a line break lies in its first half."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    if max_bytes <= 0:
        return ""
    tail = data[len(data) - max_bytes :].decode("utf-8", errors="ignore")
    cut = tail.find("\n")
    if cut != -1 and cut < len(tail) // 2:
        tail = tail[cut + 1 :]
    return tail


def _truncate_mixed(
    items: Sequence[OutputItem], costs: Sequence[int], budget: int
) -> list[OutputItem]:
    text_tokens = sum(c for item, c in zip(items, costs, strict=True) if isinstance(item, Text))
    image_count = len(items) - sum(1 for item in items if isinstance(item, Text))
    budget = max(0, budget - estimate_tokens(_marker(text_tokens, image_count)))

    # Head: whole items from the front within half the budget, then a cut text.
    head: list[OutputItem] = []
    used = 0
    index = 0
    head_cut = ""  # the part of items[index] already kept by the head
    while index < len(items):
        item, cost = items[index], costs[index]
        if used + cost <= budget // 2:
            head.append(item)
            used += cost
            index += 1
            continue
        if isinstance(item, Text):
            head_cut = _head(item.text, (budget // 2 - used) * 4)
            if head_cut:
                head.append(Text(head_cut))
                used += estimate_tokens(head_cut)
        elif used + cost <= budget:
            # An image cannot be cut to fit the half; keep it if it fits the whole
            # budget rather than lose, say, the only screenshot to a 50/50 split.
            head.append(item)
            used += cost
            index += 1
        break

    # Tail: whole items from the back with whatever budget the head left, never
    # crossing into what the head kept.
    tail: list[OutputItem] = []
    tail_budget = budget - used
    used_tail = 0
    back = len(items) - 1
    while back >= index:
        item = items[back]
        if back == index and isinstance(item, Text):
            item = Text(item.text[len(head_cut) :])
        cost = _cost(item)
        if used_tail + cost <= tail_budget:
            tail.append(item)
            used_tail += cost
            back -= 1
            continue
        if isinstance(item, Text):
            part = _tail(item.text, (tail_budget - used_tail) * 4)
            if part:
                tail.append(Text(part))
        break
    tail.reverse()

    kept = [*head, *tail]
    kept_text = sum(len(i.text.encode("utf-8")) for i in kept if isinstance(i, Text))
    all_text = sum(len(i.text.encode("utf-8")) for i in items if isinstance(i, Text))
    dropped_images = image_count - sum(1 for i in kept if isinstance(i, Image))
    dropped_tokens = math.ceil((all_text - kept_text) / 4)
    if not dropped_tokens and not dropped_images:
        return kept
    return [*head, Text(_marker(dropped_tokens, dropped_images)), *tail]
