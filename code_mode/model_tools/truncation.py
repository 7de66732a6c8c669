"""Cutting a result's output to its token budget (``max_output_tokens`` of ``exec``,
``max_tokens`` of ``wait``), keeping its head and its tail.

Tokens are estimated, not counted: ``ceil(utf8_bytes / 4)`` for text (close enough for
English and code, and it needs no tokenizer), a flat :data:`IMAGE_TOKEN_COST` for an
image, and the duration of an audio clip (:mod:`.audio_tokens`). Output whose estimate
fits the budget is returned unchanged. Otherwise the middle is cut, because the
beginning of an output (what the program set out to do) and its end (the final answer,
or the error) are the parts a model needs most:

* **only text**, exactly as the reference cuts it: the items are joined with ``\\n``
  into one text item::

      Warning: truncated output (original token count: <N>)
      Total output lines: <L>

      <head>…<K> tokens truncated…<tail>

  ``N`` is the joined text's estimate, ``L`` its lines; head and tail get half of the
  budget's bytes (``4 x tokens``) each, cut on UTF-8 character boundaries, and ``K``
  is the estimate of the bytes beyond the budget. The warning and the marker are not
  counted against the budget.
* **text with images or audio** (this package's own rule; the reference keeps items
  from the front only): first a text item ``Warning: truncated output (original token
  count: <N>)``, then items kept whole from the front until half the budget is used,
  then from the back with what is left; the text item where an end runs out of budget
  is cut (head or tail part kept). Images and audio are never cut. The image or clip
  where the head runs out of its half is still kept if it fits the whole budget (the
  head then ends there and the tail gets what is left), so one large image is not lost
  to a 50/50 split; any other one that does not fit what remains is dropped. One text
  item between the two ends says what was removed: ``…<N> tokens truncated…``,
  ``…<k> images omitted…``, ``…<m> audio clips omitted…``, or several of them joined
  by ``, ``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

from .._types import Audio, Image, OutputItem, Text
from .audio_tokens import audio_tokens

__all__ = ["IMAGE_TOKEN_COST", "estimate_tokens", "truncate_output", "truncation_warning"]

IMAGE_TOKEN_COST: Final = 765
"""Estimated tokens of one image. 765 is what OpenAI charges for a 1024x1024 image at
``high`` detail (85 base + 4 tiles x 170): a typical screenshot or chart. The exact
figure depends on the model and the image size, which the host cannot know here; what
matters is that images count, and count as a whole."""


def estimate_tokens(text: str) -> int:
    """Estimate the tokens of ``text`` as ``ceil(utf8_bytes / 4)``.

    Byte-based rather than character-based so that non-Latin text, which tokenizers
    split finely, is not under-counted."""
    return math.ceil(len(text.encode("utf-8")) / 4)


def truncation_warning(original_tokens: int) -> str:
    """The line that starts truncated output (the reference's text)."""
    return f"Warning: truncated output (original token count: {original_tokens})"


def truncate_output(items: Sequence[OutputItem], max_tokens: int) -> list[OutputItem]:
    """Cut ``items`` to about ``max_tokens`` estimated tokens, keeping head and tail.

    See the module docstring for the exact rules. Output that fits is returned
    unchanged (as a new list), so the common case costs one pass of byte counting.
    """
    budget = max(0, max_tokens)
    if all(isinstance(item, Text) for item in items):
        joined = "\n".join(item.text for item in items if isinstance(item, Text))
        if len(joined.encode("utf-8")) <= budget * 4:
            return list(items)
        return [Text(_truncate_all_text(joined, budget))]
    costs = [_cost(item) for item in items]
    if sum(costs) <= budget:
        return list(items)
    return [Text(truncation_warning(sum(costs))), *_truncate_mixed(items, costs, budget)]


def _cost(item: OutputItem) -> int:
    if isinstance(item, Image):
        return IMAGE_TOKEN_COST
    if isinstance(item, Audio):
        return audio_tokens(item.audio_url)
    return estimate_tokens(item.text)


def _count_lines(text: str) -> int:
    """Lines as an editor counts them: a final line break does not open a new line."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def _truncate_all_text(text: str, budget: int) -> str:
    data = text.encode("utf-8")
    max_bytes = budget * 4
    if max_bytes == 0:
        middle = f"…{math.ceil(len(data) / 4)} tokens truncated…"
    else:
        left = max_bytes // 2
        head = data[:left].decode("utf-8", errors="ignore")
        # The tail starts at the first character at or after its share of the bytes.
        tail = data[len(data) - (max_bytes - left) :].decode("utf-8", errors="ignore")
        removed = math.ceil((len(data) - max_bytes) / 4)
        middle = f"{head}…{removed} tokens truncated…{tail}"
    return (
        f"{truncation_warning(math.ceil(len(data) / 4))}\n"
        f"Total output lines: {_count_lines(text)}\n\n{middle}"
    )


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


def _marker(tokens: int, images: int = 0, clips: int = 0) -> str:
    parts = []
    if tokens:
        parts.append(f"{tokens} tokens truncated")
    if images:
        parts.append(f"{images} image{'' if images == 1 else 's'} omitted")
    if clips:
        parts.append(f"{clips} audio clip{'' if clips == 1 else 's'} omitted")
    return "…" + ", ".join(parts) + "…"


def _truncate_mixed(
    items: Sequence[OutputItem], costs: Sequence[int], budget: int
) -> list[OutputItem]:
    text_tokens = sum(c for item, c in zip(items, costs, strict=True) if isinstance(item, Text))
    image_count = sum(1 for item in items if isinstance(item, Image))
    clip_count = sum(1 for item in items if isinstance(item, Audio))
    budget = max(0, budget - estimate_tokens(_marker(text_tokens, image_count, clip_count)))

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
            # An image or clip cannot be cut to fit the half; keep it if it fits the
            # whole budget rather than lose, say, the only screenshot to a 50/50 split.
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
        cost = costs[back]
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
    dropped_clips = clip_count - sum(1 for i in kept if isinstance(i, Audio))
    dropped_tokens = math.ceil((all_text - kept_text) / 4)
    if not dropped_tokens and not dropped_images and not dropped_clips:
        return kept
    return [*head, Text(_marker(dropped_tokens, dropped_images, dropped_clips)), *tail]
