"""Three servers behind HAProxy (``deploy/local.sh``), thirty SDK clients over
streamable HTTP through it: sessions stick to the server that opened them, a server
killed mid-run loses only its own sessions (their clients get MCP's 404 and start
anew), and a server stopped with SIGTERM loses no result its programs finished.

Loopback only; skipped, naming the install command, without ``haproxy``."""

from __future__ import annotations

import collections
import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio
from mcp import ClientSession

from ..mcp_server.http_support import http_client, outputs, refused
from .agent import Agent
from .cluster import Cluster, local_cluster, needs_haproxy
from .cluster import Crowd as CrowdBase

pytestmark = needs_haproxy

SERVERS = 3
CLIENTS = 30
BOUND = 240.0  # seconds; a hang guard for a loaded two-core machine, not a measure


def spread(agents: list[Agent]) -> collections.Counter[int | None]:
    return collections.Counter(agent.sessions[0].pid for agent in agents)


def summary(title: str, agents: list[Agent], **facts: object) -> None:
    """What the run did, for the record (``pytest -s`` shows it; docs/deploy.md
    quotes it)."""
    latencies = sorted(latency for agent in agents for latency in agent.latencies)
    p50 = latencies[len(latencies) // 2] * 1e3
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1e3
    programs = sum(agent.completed for agent in agents)
    line = f"{title}: {len(agents)} clients, {programs} programs, {len(latencies)} requests, "
    line += f"p50 {p50:.0f} ms, p99 {p99:.0f} ms"
    print("\n" + ", ".join([line, *(f"{key} {value}" for key, value in facts.items())]))


def report(cluster: Cluster, agents: list[Agent]) -> str:
    wrong = [line for agent in agents for line in agent.wrong]
    return f"wrong results: {wrong[:5]}\n--- local.sh:\n{cluster.output()}"


class Crowd(CrowdBase):
    """:class:`.cluster.Crowd` of stateful agents, which can signal a server mid-run."""

    agents: list[Agent]

    async def signal_mid_run(
        self, nursery: trio.Nursery, cluster: Cluster, signum: int, after: int
    ) -> tuple[int, float]:
        """Start every agent in ``nursery``, wait until each has completed a program,
        then send ``signum`` to the server of the first agent's session (every client
        is in a program by then). Each agent then runs until it has completed ``after``
        more programs. Returns the server's pid and when the signal went."""
        target: dict[str, int] = {}

        def done(agent: Agent) -> bool:
            return agent.name in target and agent.completed >= target[agent.name]

        for agent in self.agents:
            nursery.start_soon(agent.run, done, self.progressed)
        await self.everyone_completed(1)
        victim = self.agents[0].pid
        assert victim in cluster.servers
        os.kill(victim, signum)
        signalled_at = trio.current_time()
        for agent in self.agents:
            target[agent.name] = agent.completed + after
        self.progressed()
        return victim, signalled_at


def by_server(agents: list[Agent], victim: int) -> tuple[list[Agent], list[Agent]]:
    """The agents whose first session was on ``victim``, and the others (both some)."""
    on_victim = [agent for agent in agents if agent.sessions[0].pid == victim]
    others = [agent for agent in agents if agent.sessions[0].pid != victim]
    assert on_victim and others, spread(agents)
    return on_victim, others


async def test_thirty_clients_keep_their_sessions_on_their_servers() -> None:
    programs = 3
    async with local_cluster(SERVERS) as cluster:
        agents = [Agent(f"c{i}", cluster.url, pause_ms=100) for i in range(CLIENTS)]
        crowd = Crowd(agents)
        with trio.fail_after(BOUND):
            async with trio.open_nursery() as nursery:
                for agent in agents:
                    nursery.start_soon(
                        agent.run, lambda a: a.completed >= programs, crowd.progressed
                    )
        assert not any(agent.wrong for agent in agents), report(cluster, agents)
        assert not any(agent.lost for agent in agents), report(cluster, agents)
        assert all(len(agent.sessions) == 1 for agent in agents)
        assert all(agent.sessions[0].completed == programs for agent in agents)
        # Every server got sessions (least connections: about a third each).
        assert set(spread(agents)) == set(cluster.servers), spread(agents)
        # Each program yielded (exec answered "running") and was resumed with `wait`.
        assert all(min(agent.spans) >= 2 for agent in agents)
        summary("sticky", agents, sessions_per_server=sorted(spread(agents).values()))


async def test_a_killed_server_loses_only_its_own_sessions() -> None:
    after = 2  # programs each client completes after the kill
    async with local_cluster(SERVERS) as cluster:
        agents = [Agent(f"c{i}", cluster.url, pause_ms=100) for i in range(CLIENTS)]
        crowd = Crowd(agents)
        with trio.fail_after(BOUND):
            async with trio.open_nursery() as nursery:
                # Mid-run: every client is in a program.
                victim, killed_at = await crowd.signal_mid_run(
                    nursery, cluster, signal.SIGKILL, after
                )
            assert await cluster.exit_status(victim) == 128 + signal.SIGKILL

        assert not any(agent.wrong for agent in agents), report(cluster, agents)
        on_victim, others = by_server(agents, victim)
        for agent in others:  # unaffected: one session, never an error
            assert agent.lost == [], (agent.name, agent.lost)
            assert len(agent.sessions) == 1
        for agent in on_victim:
            # Its session ended once, with MCP's 404 for a session that is gone...
            (lost,) = agent.lost
            assert lost.then_404, lost
            assert lost.at >= killed_at
            # ...and a new one, on a live server, carried on (values start anew).
            assert len(agent.sessions) == 2, agent.sessions
            assert agent.sessions[1].pid not in (victim, None)
            assert agent.sessions[1].completed >= 1
        summary(
            "SIGKILL",
            agents,
            sessions_lost=len(on_victim),
            others_unaffected=len(others),
            lost_mid_program=sum(lost.mid_program for a in on_victim for lost in a.lost),
            slowest_404_after_kill_s=round(max(a.lost[0].at for a in on_victim) - killed_at, 2),
        )


async def test_a_draining_server_loses_no_finished_result() -> None:
    after = 2
    async with local_cluster(SERVERS) as cluster:
        agents = [Agent(f"c{i}", cluster.url, steps=4, pause_ms=150) for i in range(CLIENTS)]
        crowd = Crowd(agents)
        newcomers = [Agent(f"new{i}", cluster.url) for i in range(5)]
        with trio.fail_after(BOUND):
            async with trio.open_nursery() as nursery:
                victim, stopped_at = await crowd.signal_mid_run(
                    nursery, cluster, signal.SIGTERM, after
                )
                await cluster.wait_line("draining (SIGTERM)")
                for agent in newcomers:  # new sessions, while the victim drains
                    nursery.start_soon(agent.run, lambda a: a.completed >= 1, lambda: None)
            # It drained and stopped by itself, with status 0.
            assert await cluster.exit_status(victim) == 0

        everyone = agents + newcomers
        assert not any(agent.wrong for agent in everyone), report(cluster, everyone)
        on_victim, others = by_server(agents, victim)
        for agent in others:
            assert agent.lost == [], (agent.name, agent.lost)
            assert len(agent.sessions) == 1
        finished_while_draining = 0
        for agent in on_victim:
            # Every program it started there finished: the session ended only between
            # programs (refused with 404, or told the server is shutting down).
            assert agent.lost and not any(lost.mid_program for lost in agent.lost), agent.lost
            first = agent.sessions[0]
            finished_while_draining += sum(at > stopped_at for at in first.completed_at)
            # New sessions went elsewhere.
            assert all(record.pid != victim for record in agent.sessions[1:])
            assert agent.sessions[-1].completed >= 1
        assert finished_while_draining >= 1  # programs in flight at SIGTERM completed
        assert all(agent.pid not in (victim, None) for agent in newcomers)
        summary(
            "SIGTERM",
            everyone,
            sessions_drained=len(on_victim),
            finished_while_draining=finished_while_draining,
            lost_mid_program=0,
            newcomers_elsewhere=len(newcomers),
            exited_after_s=round(cluster.exited_at[victim] - stopped_at, 2),
        )


async def test_when_every_server_is_full_a_new_session_is_told_so() -> None:
    """A full server fails its readiness check; while one is still offered new
    sessions it answers 503, which the balancer retries on another server; once none
    can take one, the balancer's own 503 says so, in the JSON-RPC error a client shows."""

    @asynccontextmanager
    async def session_on_a_server(url: str) -> AsyncIterator[tuple[ClientSession, str]]:
        async with http_client(url) as session:
            result = await session.call_tool("exec", {"code": "text(await tools.whoami())"})
            yield session, outputs(result)[0]

    async with local_cluster(2, "--max-sessions", "1") as cluster:
        with trio.fail_after(BOUND):
            async with (
                session_on_a_server(cluster.url) as (_, first),
                session_on_a_server(cluster.url) as (_, second),
            ):
                assert {int(first), int(second)} == set(cluster.servers)
                await cluster.wait_line("Server code_mode/s1 is DOWN")
                await cluster.wait_line("Server code_mode/s2 is DOWN")
                with refused(r"^no code mode server can take a new session now"):
                    async with http_client(cluster.url):
                        pass
            # The two sessions ended: their servers take new ones again.
            await cluster.wait_line("Server code_mode/s1 is UP")
            async with session_on_a_server(cluster.url) as (_, third):
                assert int(third) in cluster.servers
