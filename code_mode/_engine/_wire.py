"""Framing of the host <-> worker-process pipe protocol.

A frame is ``[u32 total length][u32 header length][header JSON][body]`` (big-endian).
The header is a small JSON object (``{"op": "post", "id": 3, "tag": 1040}``); the body
carries the bulky part verbatim (program code, message batches) so it is never
escaped twice. This module has no dependencies so the worker process starts fast.
"""

from __future__ import annotations

import json
import struct
from typing import Any

_LENGTHS = struct.Struct(">II")

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
            try:
                header = json.loads(head)
            except ValueError as error:
                raise FrameError(f"corrupt frame: {error}") from None
            if not isinstance(header, dict):
                raise FrameError("corrupt frame: header is not an object")
            body = body_bytes.decode("utf-8", "surrogatepass") if header.get("body") else None
            frames.append((header, body))
        return frames


def frame(header: dict[str, Any], body: str | None = None) -> bytes:
    """Encode a frame, marking in the header whether a body follows."""
    if body is not None:
        header = {**header, "body": True}
    return encode(header, body)
