"""How :class:`Isolate` posts commands: at once while fewer than
``MAX_POSTS_IN_FLIGHT`` requests (a command batch and its probe) are in flight, then
batched until one ends; idle only once every probe has reported.

A fake backend records the requests, so these tests pin the order and grouping of
what reaches the isolate exactly."""

from __future__ import annotations

import json

from code_mode import RuntimeConfig
from code_mode._engine._backend import HandleBase, IsolateHandle, IsolateSink
from code_mode._engine._bridge import EngineEvent
from code_mode._engine.isolate import MAX_POSTS_IN_FLIGHT, Isolate
from code_mode._v8 import TASK_ERROR, TASK_OK, IsolateLimits


class RecordingHandle(HandleBase):
    def __init__(self) -> None:
        super().__init__()
        #: (commands, tag, quiet, probe) per request
        self.posts: list[tuple[list[dict[str, object]], int, bool, int | None]] = []
        self.cancelled: list[int] = []

    def post(self, code: str, tag: int, quiet: bool = False, probe: int | None = None) -> None:
        self.posts.append((json.loads(code), tag, quiet, probe))

    def cancel(self, tag: int) -> None:
        self.cancelled.append(tag)

    def set_limits(self, limits: IsolateLimits) -> None:
        pass

    async def _close(self) -> None:
        pass


class OneIsolate:
    def __init__(self) -> None:
        self.handle = RecordingHandle()

    async def create_isolate(self, sink: IsolateSink, limits: IsolateLimits) -> IsolateHandle:
        return self.handle

    def take_ready_isolate(self, sink: IsolateSink, limits: IsolateLimits) -> IsolateHandle | None:
        return self.handle


class Listener:
    def __init__(self) -> None:
        self.idle = 0
        self.failures: list[str] = []

    def on_engine_event(self, event: EngineEvent) -> None:
        pass

    def on_engine_idle(self) -> None:
        self.idle += 1

    def on_engine_failure(self, message: str) -> None:
        self.failures.append(message)


def started() -> tuple[Isolate, RecordingHandle, Listener]:
    source = OneIsolate()
    isolate = Isolate(source, RuntimeConfig())
    assert isolate.take_ready()
    listener = Listener()
    isolate.start(listener, source="await tools.x({})", tools=[], stored_json="{}")
    return isolate, source.handle, listener


def result_ids(commands: list[dict[str, object]]) -> list[object]:
    return [command["id"] for command in commands]


async def test_a_result_goes_out_while_the_probe_before_it_is_in_flight() -> None:
    assert MAX_POSTS_IN_FLIGHT == 2
    isolate, handle, listener = started()
    (start, start_tag, quiet, start_probe) = handle.posts[0]
    assert start[0]["t"] == "start" and quiet and start_probe == start_tag + 1
    # The start's probe has not reported yet: the result is posted at once anyway,
    # behind it, with a probe of its own.
    isolate.send_tool_result("tool-1", "1")
    assert len(handle.posts) == 2
    commands, tag, quiet, probe = handle.posts[1]
    assert result_ids(commands) == ["tool-1"] and commands[0]["value"] == 1
    assert quiet and tag > start_probe and probe == tag + 1
    # Two requests in flight: later commands wait, and then travel together.
    isolate.send_tool_result("tool-2", "2")
    isolate.send_tool_error("tool-3", "boom")
    assert len(handle.posts) == 2 and not isolate.idle
    isolate.on_task(start_probe, TASK_OK, "")
    assert len(handle.posts) == 3
    commands, _, _, last_probe = handle.posts[2]
    assert result_ids(commands) == ["tool-2", "tool-3"]
    assert commands[1]["ok"] is False and commands[1]["message"] == "boom"
    # Idle only when the last probe has reported, not at an earlier one.
    isolate.on_task(probe, TASK_OK, "")
    assert listener.idle == 0 and not isolate.idle
    assert last_probe is not None
    isolate.on_task(last_probe, TASK_OK, "")
    assert listener.idle == 1 and isolate.idle
    assert listener.failures == []


async def test_a_failed_batch_behind_another_fails_the_cell_and_cancels_both() -> None:
    isolate, handle, listener = started()
    _, _, _, start_probe = handle.posts[0]
    isolate.send_tool_result("tool-1", "1")
    _, tag, _, probe = handle.posts[1]
    isolate.on_task(start_probe, TASK_OK, "")
    isolate.on_task(tag, TASK_ERROR, "SyntaxError: nope")
    assert listener.failures == ["exec runtime failed: SyntaxError: nope"]
    assert probe in handle.cancelled
    # Nothing more is posted to a failed isolate.
    isolate.send_tool_result("tool-2", "2")
    assert len(handle.posts) == 2 and listener.idle == 0
