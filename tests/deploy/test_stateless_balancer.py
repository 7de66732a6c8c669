"""Stateless MCP behind HAProxy round-robin: Redis and three servers (``deploy/local.sh``),
24 clients with the SDK's default ``mcp.Client(url)``. Yielding programs are resumed
with ``wait`` on whichever server the balancer picks, stored values are read back
across servers, every result is checked item by item; then one server is SIGKILLed
mid-run (its programs are resumed by the others: none lost, no call that had
completed runs again), then another gets SIGTERM (it hands its programs over).

Loopback only; skipped, naming the install command, without ``haproxy`` or
``redis-server``."""

from __future__ import annotations

import os
import shutil
import signal
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import trio

from .cluster import Cluster, Crowd, local_cluster, needs_haproxy
from .stateless_agent import StatelessAgent

pytestmark = [
    needs_haproxy,
    pytest.mark.skipif(
        shutil.which("redis-server") is None,
        reason="redis-server not found: install it with `apt-get install -y redis-server`",
    ),
]

SERVERS = 3
CLIENTS = 24
BOUND = 300.0  # seconds; a hang guard for a loaded two-core machine, not a measure


def report(cluster: Cluster, agents: list[StatelessAgent]) -> str:
    wrong = [line for agent in agents for line in agent.wrong]
    doing = "\n".join(f"{a.name} ({a.completed} done): {a.doing}" for a in agents)
    notes = ""
    if cluster.notes is not None:
        notes = f"\n--- calls run more than once:\n{repeated(cluster.notes)}"
    servers = cluster.output()
    return f"wrong results: {wrong[:5]}{notes}\n--- agents:\n{doing}\n--- local.sh:\n{servers}"


def summary(title: str, agents: list[StatelessAgent], **facts: object) -> None:
    latencies = sorted(latency for agent in agents for latency in agent.latencies)
    p50 = latencies[len(latencies) // 2] * 1e3
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1e3
    line = f"{title}: {len(agents)} clients, {sum(a.completed for a in agents)} programs, "
    line += f"{len(latencies)} requests, p50 {p50:.0f} ms, p99 {p99:.0f} ms"
    print("\n" + ", ".join([line, *(f"{key} {value}" for key, value in facts.items())]))


@contextmanager
def reported(cluster: Cluster, agents: list[StatelessAgent]) -> Iterator[None]:
    """A hang says what the servers said (the bound is a hang guard)."""
    try:
        yield
    except trio.TooSlowError as error:
        raise AssertionError(f"no progress in {BOUND:g} s\n{report(cluster, agents)}") from error


def runs_per_call(notes: Path) -> Counter[str]:
    """How often each ``tools.note`` call ran, over every server."""
    if not notes.exists():
        return Counter()
    return Counter(line.split("\t")[0] for line in notes.read_text().splitlines())


def repeated(notes: Path) -> str:
    """The lines of the calls that ran more than once, for a failure's message."""
    again = {label for label, runs in runs_per_call(notes).items() if runs > 1}
    lines = notes.read_text().splitlines() if notes.exists() else []
    return "\n".join(line for line in lines if line.split("\t")[0] in again)


def ran_elsewhere(notes: Path, server: int) -> set[str]:
    """The programs with a call that ran on another server than ``server``."""
    programs = set()
    for line in notes.read_text().splitlines():
        label, pid, _ = line.split("\t")
        if int(pid) != server:
            programs.add(label.rsplit(" step", 1)[0])
    return programs


def twice_since(notes: Path, marked: int, server: int) -> list[str]:
    """The calls that ran on ``server`` and ran again after line ``marked``."""
    lines = [line.split("\t") for line in notes.read_text().splitlines()]
    on_server = {label for label, pid, _ in lines if int(pid) == server}
    runs = Counter(label for label, _, _ in lines)
    return [label for label, _, _ in lines[marked:] if label in on_server and runs[label] > 1]


async def test_stateless_clients_any_server_then_a_kill_then_a_drain(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    async with local_cluster(SERVERS, notes=notes) as cluster:
        assert any(line.startswith("local.sh: store pid") for line in cluster.lines)
        agents = [StatelessAgent(f"c{i}", cluster.url) for i in range(CLIENTS)]
        crowd = Crowd(agents)
        stop = trio.Event()

        def done(agent: StatelessAgent) -> bool:
            return stop.is_set()

        with reported(cluster, agents), trio.fail_after(BOUND):
            async with trio.open_nursery() as nursery:
                for agent in agents:
                    nursery.start_soon(agent.run, done, crowd.progressed)
                # 1. Everyone runs programs across the three servers.
                await crowd.everyone_completed(2)
                assert not any(agent.wrong for agent in agents), report(cluster, agents)
                assert {pid for a in agents for pid in a.pids} == set(cluster.servers)
                assert all(min(agent.spans) >= 2 for agent in agents)  # yielded, then waits
                summary("stateless", agents)

                assert max(runs_per_call(notes).values()) == 1, repeated(notes)

                # 2. One server SIGKILLed while every client is in a program: another
                # server resumes each of its programs from the journal in Redis.
                victim = cluster.servers[0]
                before = {agent.name: len(agent.pids) for agent in agents}
                os.kill(victim, signal.SIGKILL)
                killed_at = trio.current_time()
                await crowd.each_completes(2)
                assert await cluster.exit_status(victim) == 128 + signal.SIGKILL
                recovered_in = trio.current_time() - killed_at
                assert not any(agent.wrong for agent in agents), report(cluster, agents)
                lost = [pid for agent in agents for pid in agent.lost]
                assert lost == [], lost  # no program lost
                resumed = sum(  # started on the victim, completed since
                    agent.pids[before[agent.name] :].count(victim) for agent in agents
                )
                # A call that had completed never runs again; one in flight on the dead
                # server runs again once: at most one per program that was running there.
                again = [label for label, runs in runs_per_call(notes).items() if runs > 1]
                assert max(runs_per_call(notes).values()) <= 2, repeated(notes)
                assert len(again) <= CLIENTS, again
                summary(
                    "SIGKILL",
                    agents,
                    programs_lost=len(lost),
                    programs_resumed_elsewhere=resumed,
                    calls_run_twice=len(again),
                    answers_lost=sum(len(a.orphaned_at) for a in agents),
                    all_done_after_s=round(recovered_in, 1),
                )

                # 3. SIGTERM on another: it hands its programs over (calls in flight
                # finish there, the rest run on the remaining server), then exits.
                marked = len(notes.read_text().splitlines())
                drained = cluster.servers[1]
                before = {agent.name: len(agent.pids) for agent in agents}
                os.kill(drained, signal.SIGTERM)
                drained_at = trio.current_time()
                assert await cluster.exit_status(drained) == 0
                drained_in = trio.current_time() - drained_at
                exited = {agent.name: len(agent.pids) for agent in agents}
                await crowd.each_completes(2)
                stop.set()
                assert [pid for agent in agents for pid in agent.lost] == []
                assert not any(agent.wrong for agent in agents), report(cluster, agents)
                # Its programs that moved: those it started that completed after it
                # exited, or whose calls ran on another server.
                elsewhere = ran_elsewhere(notes, drained)
                handed = [
                    label
                    for agent in agents
                    for i, (label, pid) in enumerate(zip(agent.labels, agent.pids, strict=True))
                    if i >= before[agent.name]
                    and pid == drained
                    and (i >= exited[agent.name] or label in elsewhere)
                ]
                assert handed, "no program of the drained server moved to another"
                # No call of the drained server ran again: a call in flight there
                # finished before its program moved. (A program of the killed server
                # whose client had given up on it may be resumed only now, and run its
                # call in flight again: not the drain's doing.)
                assert twice_since(notes, marked, drained) == [], repeated(notes)
                summary(
                    "SIGTERM",
                    agents,
                    programs_handed_over=len(handed),
                    server_exited_after_s=round(drained_in, 1),
                    execs_refused=sum(a.refused for a in agents),
                )
        # Stored values: each session's counter went up once per completed program
        # (each program checked it: stateless_agent.py), unless a program whose answer
        # was lost completed late and wrote the counter it had read (the last writer
        # wins): those sessions' counters are checked program by program only.
        for agent in agents:
            if not agent.orphaned_at:
                assert agent.count >= agent.completed, (agent.name, agent.count, agent.completed)
