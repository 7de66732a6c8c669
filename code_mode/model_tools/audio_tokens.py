"""What an audio item costs in the output budget.

A model is billed for audio by its duration, not by the size of its encoding, so an
audio item costs :data:`AUDIO_TOKENS_PER_SECOND` tokens per second of sound, as the
reference estimates it. The duration is read from the bytes of a PCM WAV clip (the
same reading as the runtime's short-clip rule, ``js/audio.js``); for any other format,
which this package has no decoder for, the item costs what its URL would as text
(``ceil(bytes / 4)``), the reference's own fallback. That overestimates compressed
audio (MP3, Ogg) a lot: such clips are the first to go when output is cut.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from typing import Final

__all__ = ["AUDIO_TOKENS_PER_SECOND", "audio_tokens", "wav_seconds"]

AUDIO_TOKENS_PER_SECOND: Final = 10.0
"""Estimated tokens per second of audio (the reference's figure)."""

_MAX_BASE64: Final = 69_905_068  # the runtime's bound (50 MiB of audio), see js/audio.js
_EXTENSIBLE_GUID_TAIL: Final = bytes([0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xAA, 0, 0x38, 0x9B, 0x71])


def audio_tokens(audio_url: str) -> int:
    """The estimated tokens of an audio item with ``audio_url``."""
    seconds = wav_seconds(audio_url)
    if seconds is None:
        return math.ceil(len(audio_url.encode("utf-8", "surrogatepass")) / 4)
    return math.ceil(seconds * AUDIO_TOKENS_PER_SECOND)


def wav_seconds(audio_url: str) -> float | None:
    """The duration of the PCM (or IEEE float) WAV clip in a base64 ``data:`` URL,
    from the sample frames actually present; ``None`` for anything else."""
    head, comma, payload = audio_url.partition(",")
    if not comma or not any(part.lower() == "base64" for part in head.split(";")[1:]):
        return None
    if len(payload) > _MAX_BASE64 or not payload.isascii():
        return None
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        return None
    if not _canonical_tail(payload, data):
        return None
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        return None
    fmt: tuple[int, int] | None = None
    at = 12
    while len(data) - at >= 8:
        chunk_id = data[at : at + 4]
        (size,) = struct.unpack_from("<I", data, at + 4)
        start = at + 8
        chunk = data[start : start + size]  # a streaming header may claim more
        if chunk_id == b"fmt ":
            if len(chunk) < 2:
                return None
            (encoding,) = struct.unpack_from("<H", chunk, 0)
            if encoding == 0xFFFE:
                if len(chunk) < 40 or chunk[26:40] != _EXTENSIBLE_GUID_TAIL:
                    return None
                (encoding,) = struct.unpack_from("<H", chunk, 24)
            if encoding not in (1, 3) or len(chunk) < 14:
                return None
            (rate,) = struct.unpack_from("<I", chunk, 4)
            (align,) = struct.unpack_from("<H", chunk, 12)
            if rate == 0 or align == 0:
                return None
            fmt = (rate, align)
        elif chunk_id == b"data":
            if fmt is None:
                return None
            return (len(chunk) // fmt[1]) / fmt[0]
        step = size + size % 2
        if step > len(data) - start:
            return None
        at = start + step
    return None


def _canonical_tail(payload: str, data: bytes) -> bool:
    """Whether the last base64 group of ``payload`` (which decoded to ``data``) has no
    stray bits, as strict base64 requires: re-encoding its bytes gives it back."""
    if not payload:
        return True
    group = payload[-4:]
    count = len(group.rstrip("=")) * 3 // 4  # the bytes the last group encodes
    return base64.b64encode(data[len(data) - count :]).decode("ascii") == group
