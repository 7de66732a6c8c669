"""A cell's output as the store keeps it: each event one JSON text, any server reads it.

The server running a stateless cell appends what the cell outputs (``output``) and,
last, how it ended (``end``: completed, failed with an error text, or terminated), so
that a ``wait`` landing on any server builds the same result from the store
(:mod:`.stateless`). Output items keep their kind: text, images (with their detail)
and audio.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import attrs

from .._types import Audio, CellEvent, Completed, Image, ImageDetail, OutputItem, Terminated, Text

__all__ = ["Decoded", "decode_event", "encode_end", "encode_output"]


@attrs.frozen
class Decoded:
    """One stored event: its output items, and for the last one the cell's end."""

    items: list[OutputItem]
    end: Completed | Terminated | None = None


def _item(item: OutputItem) -> dict[str, Any]:
    if isinstance(item, Text):
        return {"text": item.text}
    if isinstance(item, Image):
        return {"image": item.image_url, "detail": item.detail.value if item.detail else None}
    return {"audio": item.audio_url}


def _output_item(data: dict[str, Any]) -> OutputItem:
    if "text" in data:
        return Text(str(data["text"]))
    if "image" in data:
        detail = data.get("detail")
        return Image(str(data["image"]), ImageDetail(detail) if detail else None)
    return Audio(str(data["audio"]))


def encode_output(items: Iterable[OutputItem]) -> str:
    """Output a running cell produced."""
    return json.dumps({"output": [_item(item) for item in items]}, ensure_ascii=False)


def encode_end(event: CellEvent) -> str:
    """The cell's end (its last output included); a running event reads as terminated."""
    items = [_item(item) for item in event.content_items]
    if isinstance(event, Completed):
        end = {"completed": True, "error": event.error_text}
    else:
        end = {"completed": False, "error": None}
    return json.dumps({"output": items, "end": end}, ensure_ascii=False)


def decode_event(text: str) -> Decoded:
    """An event as :func:`encode_output`/:func:`encode_end` wrote it."""
    data = json.loads(text)
    items = [_output_item(item) for item in data.get("output", [])]
    end = data.get("end")
    if end is None:
        return Decoded(items)
    if end.get("completed"):
        return Decoded(items, Completed([], end.get("error")))
    return Decoded(items, Terminated([]))
