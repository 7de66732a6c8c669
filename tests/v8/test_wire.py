"""The worker-process pipe: every frame, defined once in ``code_mode._v8._wire``, reads
back as itself, whether its header is JSON or binary, whole or split across reads."""

from __future__ import annotations

import pytest

from code_mode._v8 import (
    Batch,
    Cancel,
    Close,
    Closed,
    Create,
    Created,
    FrameError,
    FrameReader,
    IsolateLimits,
    Post,
    Ready,
    Selftest,
    SelftestResults,
    SetLimits,
    Task,
)
from code_mode._v8._wire import Frame

LIMITS = IsolateLimits(memory_limit_bytes=1 << 28, max_message_chars=1 << 20)


def read_all(data: bytes, step: int | None = None) -> list[Frame]:
    reader = FrameReader()
    if step is None:
        return reader.feed(data)
    frames = []
    for start in range(0, len(data), step):
        frames.extend(reader.feed(data[start : start + step]))
    return frames


def test_every_frame_reads_back_as_itself() -> None:
    frames: list[Frame] = [
        Post(7, 1040, '[{"t":"result"}]', quiet=True, probe=1041),
        Post(8, 17, "[]"),
        Batch(7, '[{"t":"tool","id":"tool-1","name":"é\ud800"}]'),
        Batch(9, None),
        Task(7, 1041, "ok", "queued"),
        Task(7, 1042, "error", "SyntaxError: ✗"),
        Create(3, LIMITS),
        SetLimits(3, IsolateLimits(memory_limit_bytes=1 << 20, max_message_chars=5)),
        Cancel(3, 1050),
        Close(3),
        Selftest("/tmp/x"),
        Ready(["landlock"]),
        Created(3),
        Created(4, "failed to initialize code mode runtime"),
        Closed(3),
        SelftestResults({"fork": "EPERM"}),
    ]
    data = b"".join(frame.encode() for frame in frames)
    assert read_all(data) == frames
    assert read_all(data, step=3) == frames  # frames split across reads


def test_limits_cross_under_their_own_names() -> None:
    """One name end to end: the wire carries IsolateLimits' fields as they are."""
    data = Create(3, LIMITS).encode()
    assert b'"limits":{"memory_limit_bytes":268435456,"max_message_chars":1048576}' in data


@pytest.mark.parametrize("outcome", ["ok", "error", "oom", "terminated"])
def test_every_outcome_crosses(outcome: str) -> None:
    task = Task(1, 16, outcome, "")  # type: ignore[arg-type]
    assert read_all(task.encode()) == [task]


@pytest.mark.parametrize("head", [b"X\x00\x00\x00\x01", b"P\x00\x01", b"T" + bytes(8) + b"\x09"])
def test_a_corrupt_binary_header_is_a_frame_error(head: bytes) -> None:
    data = (len(head) + 4).to_bytes(4, "big") + len(head).to_bytes(4, "big") + head
    with pytest.raises(FrameError):
        FrameReader().feed(data)


@pytest.mark.parametrize(
    "head",
    [
        b'{"op":"nothing"}',
        b'{"op":"closed","id":"3"}',
        b'{"op":"created","id":3,"error":7}',
        b'{"op":"create","id":3,"limits":{"memory_limit_bytes":1}}',
        b"[1]",
    ],
)
def test_a_corrupt_json_header_is_a_frame_error(head: bytes) -> None:
    data = (len(head) + 4).to_bytes(4, "big") + len(head).to_bytes(4, "big") + head
    with pytest.raises(FrameError):
        FrameReader().feed(data)
