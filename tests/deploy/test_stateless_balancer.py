"""Stateless MCP behind HAProxy round-robin: Redis and three servers (``deploy/local.sh``),
24 clients with the SDK's default ``mcp.Client(url)``. Yielding programs are resumed
with ``wait`` on whichever server the balancer picks, stored values are read back
across servers, every result is checked item by item; then one server is SIGKILLed
mid-run, then another gets SIGTERM.

Loopback only; skipped, naming the install command, without ``haproxy`` or
``redis-server``."""

from __future__ import annotations

import os
import shutil
import signal

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
    return f"wrong results: {wrong[:5]}\n--- local.sh:\n{cluster.output()}"


def summary(title: str, agents: list[StatelessAgent], **facts: object) -> None:
    latencies = sorted(latency for agent in agents for latency in agent.latencies)
    p50 = latencies[len(latencies) // 2] * 1e3
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1e3
    line = f"{title}: {len(agents)} clients, {sum(a.completed for a in agents)} programs, "
    line += f"{len(latencies)} requests, p50 {p50:.0f} ms, p99 {p99:.0f} ms"
    print("\n" + ", ".join([line, *(f"{key} {value}" for key, value in facts.items())]))


async def test_stateless_clients_any_server_then_a_kill_then_a_drain() -> None:
    async with local_cluster(SERVERS) as cluster:
        assert any(line.startswith("local.sh: store pid") for line in cluster.lines)
        agents = [StatelessAgent(f"c{i}", cluster.url) for i in range(CLIENTS)]
        crowd = Crowd(agents)
        stop = trio.Event()

        def done(agent: StatelessAgent) -> bool:
            return stop.is_set()

        with trio.fail_after(BOUND):
            async with trio.open_nursery() as nursery:
                for agent in agents:
                    nursery.start_soon(agent.run, done, crowd.progressed)
                # 1. Everyone runs programs across the three servers.
                await crowd.everyone_completed(2)
                assert not any(agent.wrong for agent in agents), report(cluster, agents)
                assert {pid for a in agents for pid in a.pids} == set(cluster.servers)
                assert all(min(agent.spans) >= 2 for agent in agents)  # yielded, then waits
                summary("stateless", agents)

                # 2. One server SIGKILLed while every client is in a program.
                victim = cluster.servers[0]
                os.kill(victim, signal.SIGKILL)
                killed_at = trio.current_time()
                await crowd.each_completes(2)
                assert await cluster.exit_status(victim) == 128 + signal.SIGKILL
                recovered_in = trio.current_time() - killed_at
                assert not any(agent.wrong for agent in agents), report(cluster, agents)
                lost = [pid for agent in agents for pid in agent.lost]
                assert set(lost) <= {victim}, lost  # only the dead server's programs
                summary(
                    "SIGKILL",
                    agents,
                    programs_lost_and_rerun=len(lost),
                    calls_retried=sum(len(a.retried) for a in agents),
                    all_done_after_s=round(recovered_in, 1),
                )

                # 3. SIGTERM on another: it drains; its programs complete.
                drained = cluster.servers[1]
                lost_before = sum(len(agent.lost) for agent in agents)
                os.kill(drained, signal.SIGTERM)
                await crowd.each_completes(2)
                stop.set()
                assert await cluster.exit_status(drained) == 0
                assert sum(len(agent.lost) for agent in agents) == lost_before
                assert not any(agent.wrong for agent in agents), report(cluster, agents)
                summary("SIGTERM", agents, execs_refused=sum(a.refused for a in agents))
        # Stored values: each session's counter went up once per completed program.
        for agent in agents:
            assert agent.count >= agent.completed, (agent.name, agent.count, agent.completed)
