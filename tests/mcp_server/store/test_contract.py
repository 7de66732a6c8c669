"""The `Store` contract, run against the memory store and a real Redis alike."""

from __future__ import annotations

import trio
import trio.testing

from code_mode.mcp_server.store import CellRecord, Delivered, JournalEntry, new_handle

from .conftest import StoreFactory

BOUND = 10.0  # seconds any wait below may take at most (a bound, never the expected time)


async def test_session_values_round_trip(make_store: StoreFactory) -> None:
    async with make_store() as store:
        session = await store.new_session()
        assert await store.load_values(session) == {}
        assert await store.save_values(session, {"a": "1", "b": '"two"'})
        assert await store.save_values(session, {"a": None, "c": "[]"})
        assert await store.load_values(session) == {"b": '"two"', "c": "[]"}
        assert await store.touch_session(session)
        await store.drop_session(session)
        assert await store.load_values(session) is None
        assert not await store.save_values(session, {"a": "1"})


async def test_guessed_neighbouring_and_foreign_handles_are_absent(
    make_store: StoreFactory,
) -> None:
    async with make_store() as store:
        session = await store.new_session()
        cell = await store.register_cell(session, "server-a")
        neighbour = cell[:-1] + ("A" if cell[-1] != "A" else "B")
        for other in [new_handle(), neighbour, "1", "", cell + "x", "../" + cell, "*"]:
            assert await store.cell(other) is None
            assert await store.read_events(other, 0) is None
            assert await store.read_journal(other) is None
            assert await store.append_event(other, "e") is None
            assert not await store.send_command(other, "terminate")
            assert await store.load_values(other) is None
        assert await store.cell(cell) == CellRecord(cell, session, "server-a")


async def test_session_expires_after_its_ttl_unless_used(make_store: StoreFactory) -> None:
    ttl = 1.0
    async with make_store(session_ttl=ttl) as store:
        idle = await store.new_session()
        used = await store.new_session()
        cell = await store.register_cell(used, "server-a")
        start = trio.current_time()
        while trio.current_time() - start < 2 * ttl:  # used every ttl/5: stays
            assert await store.touch_session(used)
            assert await store.append_event(cell, "tick") is not None
            await trio.sleep(ttl / 5)
        # Past its TTL the idle one is gone (expiry is exact: no hoping involved).
        assert await store.load_values(idle) is None
        assert await store.load_values(used) == {}
        await trio.sleep(ttl * 1.2)
        assert await store.load_values(used) is None
        assert await store.cell(cell) is None


async def test_journal_keeps_entries_in_order(make_store: StoreFactory) -> None:
    async with make_store() as store:
        cell = await store.register_cell(await store.new_session(), "server-a")
        entries = [
            JournalEntry("source", '{"source": "text(\'hi\')", "call_id": "exec-1"}'),
            JournalEntry("handed", "0"),
            JournalEntry("batch", '[{"t":"result","id":"tool-1","ok":true,"value":"x:y"}]'),
            JournalEntry("clock", "[1796195064562.0]"),
            JournalEntry("call", "tool-2"),
            JournalEntry("rerun", "tool-2"),
            JournalEntry("batch", '[{"t":"fire","id":3}]\nline two'),
            JournalEntry("unusable", ""),
        ]
        for index, entry in enumerate(entries):
            assert await store.append_journal(cell, entry) == index
        assert await store.read_journal(cell) == entries


async def test_events_read_from_an_offset(make_store: StoreFactory) -> None:
    async with make_store() as store:
        cell = await store.register_cell(await store.new_session(), "server-a")
        for index in range(5):
            assert await store.append_event(cell, f"event {index}") == index
        read = await store.read_events(cell, 2)
        assert read is not None
        assert read.entries == ("event 2", "event 3", "event 4")
        assert read.next_offset == 5
        empty = await store.read_events(cell, 5, timeout=0.05)
        assert empty is not None and empty.entries == () and empty.next_offset == 5


async def test_blocking_read_is_woken_by_an_append(make_store: StoreFactory) -> None:
    async with make_store() as store:
        cell = await store.register_cell(await store.new_session(), "server-a")
        got = []

        async def reader() -> None:
            read = await store.read_events(cell, 0, timeout=BOUND)
            assert read is not None
            got.append((read, trio.current_time()))

        with trio.fail_after(BOUND):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(reader)
                await trio.testing.wait_all_tasks_blocked()
                appended = trio.current_time()
                await store.append_event(cell, "wake up")
        read, when = got[0]
        assert read.entries == ("wake up",) and read.next_offset == 1
        assert when - appended < BOUND / 2  # woken by the append, not by the timeout


async def test_dropping_a_cell_ends_its_readers(make_store: StoreFactory) -> None:
    async with make_store() as store:
        session = await store.new_session()
        cell = await store.register_cell(session, "server-a")
        await store.append_journal(cell, JournalEntry("source", "1"))
        await store.drop_cell(cell)
        assert await store.cell(cell) is None
        assert await store.read_journal(cell) is None
        assert await store.read_events(cell, 0, timeout=0.05) is None


async def test_finished_cell_keeps_its_events_for_a_late_wait(make_store: StoreFactory) -> None:
    async with make_store() as store:
        session = await store.new_session()
        cell = await store.register_cell(session, "server-a")
        await store.append_event(cell, "done")
        await store.finish_cell(cell)
        assert await store.cell(cell) == CellRecord(cell, session, None)
        read = await store.read_events(cell, 0)
        assert read is not None and read.entries == ("done",)
        assert not await store.send_command(cell, "terminate")  # nobody runs it


async def test_dead_server_is_found_and_claimed_by_exactly_one(make_store: StoreFactory) -> None:
    async with make_store(heartbeat_ttl=0.3) as store:
        session = await store.new_session()
        await store.heartbeat("dead")
        cells = sorted([await store.register_cell(session, "dead") for _ in range(5)])
        finished = await store.register_cell(session, "dead")
        await store.finish_cell(finished)
        assert await store.send_command(cells[0], "preempt")
        assert await store.claim_cells("dead", "early") == []  # still alive: nothing
        with trio.fail_after(BOUND):
            while "dead" not in await store.dead_servers():
                for claimant in ("a", "b", "c", "d", "e", "f", "g", "h"):
                    await store.heartbeat(claimant)
                await trio.sleep(0.05)
        results: dict[str, list[CellRecord]] = {}

        async def claim(claimant: str) -> None:
            results[claimant] = await store.claim_cells("dead", claimant)

        async with trio.open_nursery() as nursery:
            for claimant in ("a", "b", "c", "d", "e", "f", "g", "h"):
                nursery.start_soon(claim, claimant)
        winners = [name for name, claimed in results.items() if claimed]
        assert len(winners) == 1, results
        winner = winners[0]
        assert sorted(record.cell for record in results[winner]) == cells
        for cell in cells:
            assert await store.cell(cell) == CellRecord(cell, session, winner)
        assert "dead" not in await store.dead_servers()
        # The command queued for the dead server follows its cell to the winner.
        assert await store.receive_commands(winner) == [Delivered(cells[0], "preempt")]


async def test_a_retired_server_is_dead_at_once(make_store: StoreFactory) -> None:
    async with make_store(heartbeat_ttl=600) as store:
        session = await store.new_session()
        await store.heartbeat("leaving")
        await store.heartbeat("staying")
        cell = await store.register_cell(session, "leaving")
        assert await store.claim_cells("leaving", "staying") == []  # alive: nothing
        await store.retire("leaving")
        assert await store.dead_servers() == ["leaving"]
        assert await store.claim_cells("leaving", "staying") == [
            CellRecord(cell, session, "staying")
        ]
        await store.retire("nobody")  # an unknown server: nothing to do
        assert await store.dead_servers() == []


async def test_commands_reach_the_running_server(make_store: StoreFactory) -> None:
    async with make_store() as store:
        session = await store.new_session()
        mine = await store.register_cell(session, "server-a")
        theirs = await store.register_cell(session, "server-b")
        assert await store.receive_commands("server-a") == []
        got: list[Delivered] = []

        async def receiver() -> None:
            got.extend(await store.receive_commands("server-a", timeout=BOUND))

        with trio.fail_after(BOUND):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(receiver)
                await trio.testing.wait_all_tasks_blocked()
                assert await store.send_command(theirs, "terminate")
                assert await store.send_command(mine, "terminate")
        assert got == [Delivered(mine, "terminate")]
        assert await store.receive_commands("server-b") == [Delivered(theirs, "terminate")]
        assert await store.receive_commands("server-a", timeout=0.05) == []


async def test_the_cursor_is_kept_with_the_cell(make_store: StoreFactory) -> None:
    async with make_store() as store:
        session = await store.new_session()
        cell = await store.register_cell(session, "a")
        assert (await store.cell(cell)) == CellRecord(cell, session, "a", 0)
        assert await store.set_cursor(cell, 3)
        assert (await store.cell(cell)) == CellRecord(cell, session, "a", 3)
        await store.finish_cell(cell)
        assert (await store.cell(cell)) == CellRecord(cell, session, None, 3)
        assert not await store.set_cursor(new_handle(), 1)
        await store.drop_cell(cell)
        assert not await store.set_cursor(cell, 4)
