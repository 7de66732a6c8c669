"""Framing of the host <-> worker-process pipe protocol.

A frame is ``[u32 total length][u32 header length][header][body]`` (big-endian).
The header is a small JSON object (``{"op": "post", "id": 3, "tag": 1040}``); the body
carries the bulky part verbatim (program code, message batches) so it is never
escaped twice. This module has no dependencies so the worker process starts fast.

The three frames of every tool call (``post`` to the worker, ``batch`` and ``task``
back) have a binary header instead (:func:`post_frame`, :func:`batch_frame`,
:func:`task_frame`): a letter and fixed-size integers, so neither side encodes or
parses JSON for them. A JSON header starts with ``{``, so the reader tells them apart
by the first byte, and hands both out as the same dictionaries.
"""

from __future__ import annotations

import json
import struct
from typing import Any

from ._native import TASK_ERROR, TASK_OK, TASK_OOM, TASK_TERMINATED

_LENGTHS = struct.Struct(">II")
_POST = struct.Struct(">cIIIB")  # b"P", isolate id, tag, probe tag (0: none), quiet
_BATCH = struct.Struct(">cI")  # b"B" (body: the batch) or b"O" (oversized), isolate id
_TASK = struct.Struct(">cIIB")  # b"T", isolate id, tag, outcome (body: the detail)
_OUTCOMES = (TASK_OK, TASK_ERROR, TASK_OOM, TASK_TERMINATED)  # by code, on the wire
_OUTCOME_CODES = {outcome: code for code, outcome in enumerate(_OUTCOMES)}

#: Upper bound of one frame; a bigger one means a corrupt stream.
MAX_FRAME = 1 << 30


class FrameError(Exception):
    """The byte stream does not contain valid frames."""


#: One encoder for every header: ``json.dumps`` with an option builds one per call
#: (a few microseconds, and every tool call crosses the pipe in three frames).
_HEADER_ENCODER = json.JSONEncoder(separators=(",", ":"))


def encode(header: dict[str, Any], body: str | None = None) -> bytes:
    head = _HEADER_ENCODER.encode(header).encode("utf-8")
    data = b"" if body is None else body.encode("utf-8", "surrogatepass")
    return _LENGTHS.pack(len(head) + len(data) + 4, len(head)) + head + data


class FrameReader:
    """Incremental decoder: feed bytes, take complete ``(header, body)`` frames."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes | bytearray) -> list[tuple[dict[str, Any], str | None]]:
        self._buffer += data
        frames: list[tuple[dict[str, Any], str | None]] = []
        while len(self._buffer) >= 8:
            total, head_length = _LENGTHS.unpack_from(self._buffer)
            if total > MAX_FRAME or head_length > total - 4:
                raise FrameError("corrupt frame header")
            if len(self._buffer) < total + 4:
                break
            head = bytes(self._buffer[8 : 8 + head_length])
            body_bytes = bytes(self._buffer[8 + head_length : total + 4])
            del self._buffer[: total + 4]
            if head[:1] != b"{":
                frames.append(_binary(head, body_bytes))
                continue
            try:
                header = json.loads(head)
            except ValueError as error:
                raise FrameError(f"corrupt frame: {error}") from None
            if not isinstance(header, dict):
                raise FrameError("corrupt frame: header is not an object")
            body = body_bytes.decode("utf-8", "surrogatepass") if header.get("body") else None
            frames.append((header, body))
        return frames


def _binary(head: bytes, body_bytes: bytes) -> tuple[dict[str, Any], str | None]:
    """A frame with a binary header, as the dictionary its JSON header would be."""
    kind = head[:1]
    try:
        if kind == b"P":
            _, isolate_id, tag, probe, quiet = _POST.unpack(head)
            header: dict[str, Any] = {"op": "post", "id": isolate_id, "tag": tag}
            if quiet:
                header["quiet"] = True
            if probe:
                header["probe"] = probe
        elif kind == b"B":
            header = {"ev": "batch", "id": _BATCH.unpack(head)[1]}
        elif kind == b"O":
            return {"ev": "batch", "id": _BATCH.unpack(head)[1], "oversized": True}, None
        elif kind == b"T":
            _, isolate_id, tag, outcome = _TASK.unpack(head)
            detail = body_bytes.decode("utf-8", "surrogatepass")
            return {
                "ev": "task",
                "id": isolate_id,
                "tag": tag,
                "outcome": _OUTCOMES[outcome],
                "detail": detail,
            }, None
        else:
            raise FrameError("corrupt frame: unknown header")
    except (struct.error, IndexError):
        raise FrameError("corrupt frame: bad binary header") from None
    header["body"] = True
    return header, body_bytes.decode("utf-8", "surrogatepass")


def _binary_frame(head: bytes, body: str) -> bytes:
    data = body.encode("utf-8", "surrogatepass")
    return _LENGTHS.pack(len(head) + len(data) + 4, len(head)) + head + data


def post_frame(isolate_id: int, tag: int, body: str, *, quiet: bool, probe: int | None) -> bytes:
    """``{"op": "post", "id", "tag", ["quiet"], ["probe"]}`` with ``body``, binary
    (tags are positive: 0 stands for no probe)."""
    head = _POST.pack(b"P", isolate_id, tag, probe or 0, quiet)
    return _binary_frame(head, body)


def batch_frame(isolate_id: int, body: str | None) -> bytes:
    """``{"ev": "batch", "id"}`` with the batch, or ``"oversized"`` for ``None``."""
    if body is None:
        return _binary_frame(_BATCH.pack(b"O", isolate_id), "")
    return _binary_frame(_BATCH.pack(b"B", isolate_id), body)


def task_frame(isolate_id: int, tag: int, outcome: str, detail: str) -> bytes:
    """``{"ev": "task", "id", "tag", "outcome", "detail"}``, binary."""
    head = _TASK.pack(b"T", isolate_id, tag, _OUTCOME_CODES[outcome])
    return _binary_frame(head, detail)


def frame(header: dict[str, Any], body: str | None = None) -> bytes:
    """Encode a frame, marking in the header whether a body follows."""
    if body is not None:
        header = {**header, "body": True}
    return encode(header, body)
