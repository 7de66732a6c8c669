"""The framing of the worker-process pipe: JSON headers and the binary headers of the
three frames every tool call sends, read back as the same dictionaries."""

from __future__ import annotations

import pytest

from code_mode._engine._wire import (
    FrameError,
    FrameReader,
    batch_frame,
    frame,
    post_frame,
    task_frame,
)


def read_all(data: bytes, step: int | None = None) -> list[tuple[dict[str, object], str | None]]:
    reader = FrameReader()
    if step is None:
        return reader.feed(data)
    frames = []
    for start in range(0, len(data), step):
        frames.extend(reader.feed(data[start : start + step]))
    return frames


def test_binary_frames_read_back_as_their_json_headers_would() -> None:
    data = (
        post_frame(7, 1040, '[{"t":"result"}]', quiet=True, probe=1041)
        + post_frame(8, 17, "[]", quiet=False, probe=None)
        + batch_frame(7, '[{"t":"tool","id":"tool-1","name":"é\ud800"}]')
        + batch_frame(9, None)
        + task_frame(7, 1041, "ok", "queued")
        + task_frame(7, 1042, "error", "SyntaxError: ✗")
        + frame({"ev": "pong"})
    )
    expected = [
        (
            {"op": "post", "id": 7, "tag": 1040, "quiet": True, "probe": 1041, "body": True},
            '[{"t":"result"}]',
        ),
        ({"op": "post", "id": 8, "tag": 17, "body": True}, "[]"),
        (
            {"ev": "batch", "id": 7, "body": True},
            '[{"t":"tool","id":"tool-1","name":"é\ud800"}]',
        ),
        ({"ev": "batch", "id": 9, "oversized": True}, None),
        ({"ev": "task", "id": 7, "tag": 1041, "outcome": "ok", "detail": "queued"}, None),
        (
            {"ev": "task", "id": 7, "tag": 1042, "outcome": "error", "detail": "SyntaxError: ✗"},
            None,
        ),
        ({"ev": "pong"}, None),
    ]
    assert read_all(data) == expected
    assert read_all(data, step=3) == expected  # frames split across reads


@pytest.mark.parametrize("outcome", ["ok", "error", "oom", "terminated"])
def test_every_outcome_crosses(outcome: str) -> None:
    assert read_all(task_frame(1, 16, outcome, "")) == [
        ({"ev": "task", "id": 1, "tag": 16, "outcome": outcome, "detail": ""}, None)
    ]


@pytest.mark.parametrize("head", [b"X\x00\x00\x00\x01", b"P\x00\x01", b"T" + bytes(8) + b"\x09"])
def test_a_corrupt_binary_header_is_a_frame_error(head: bytes) -> None:
    data = (len(head) + 4).to_bytes(4, "big") + len(head).to_bytes(4, "big") + head
    with pytest.raises(FrameError):
        FrameReader().feed(data)
