"""Latency through the load balancer against straight to the servers, and stateful
against stateless clients (docs/deploy.md).

    python -m bench.deploy                       # 1, 2 and 3 servers, 30 clients
    python -m bench.deploy --servers 3 --clients 10 --programs 3   # a quick run
    python -m bench.deploy --out DIR             # also deploy.json

For each server count N, ``deploy/local.sh N PORT`` starts N servers and HAProxy on
127.0.0.1 (HAProxy must be installed). The same clients then run the same work twice:
once through the balancer, once each client connected straight to one server (client
i to server i mod N, which is how the balancer spreads them too). Each client is an
SDK client over streamable HTTP running programs one after another in its session;
each program yields at once and between its steps (``yield_control()`` and a tool
call), and is resumed with ``wait`` until it completes, as the test of
tests/deploy/ does, without its pauses: the time measured is the servers' and the
path's, not a program's sleep. Every request (``exec`` or ``wait``) is timed from the
client.

A third path, ``stateless``, runs the same work through the balancer with the SDK's
default client (``mcp.Client(url)``: the stateless revision, no stickiness), so every
``wait`` is answered from the store (Redis, which local.sh starts) by whichever server
the balancer picks, and stored values go through it too: against ``balancer``
(stateful sessions, kept in their server's process) it is the cost of the store.

The machine's load (``uptime``) is printed before and after: on a shared machine the
numbers are only comparable within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import mcp.types as types
import trio
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client

from bench.stats import summarize
from code_mode import tool

ROOT = Path(__file__).resolve().parent.parent
LOCAL_SH = ROOT / "deploy" / "local.sh"

PROGRAM = """// @exec: {"yield_time_ms": 20000}
const count = (load("count") ?? 0) + 1;
for (let step = 0; step < STEPS; step++) {
  text(`step ${step} of ${await tools.whoami()}`);
  yield_control();
}
store("count", count);
text(`done ${count}`);
"""


@tool
async def whoami() -> int:
    """The id of the server process running the program."""
    return os.getpid()


TOOLS = [whoami]


def _texts(result: types.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, types.TextContent)]


async def _to_the_end(
    call: Callable[[str, dict[str, Any]], Awaitable[types.CallToolResult]],
    result: types.CallToolResult,
    number: int,
    latencies: list[float],
) -> None:
    """Resume a program with ``wait`` until it ends; check it is the ``number``-th."""
    while (header := _texts(result)[0]).startswith("Script running with cell ID "):
        cell = header.split("\n")[0].removeprefix("Script running with cell ID ")
        started = time.perf_counter()
        result = await call("wait", {"cell_id": cell, "yield_time_ms": 100})
        latencies.append(time.perf_counter() - started)
    # The last line of the text (all of it in one item; in separate items before
    # issue 35, for a --checkout of an older server).
    if _texts(result)[-1].rsplit("\n", 1)[-1] != f"done {number}":
        raise AssertionError(f"unexpected result: {_texts(result)}")


async def _client(url: str, programs: int, steps: int, latencies: list[float]) -> None:
    source = PROGRAM.replace("STEPS", str(steps))
    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        for number in range(1, programs + 1):
            started = time.perf_counter()
            result = await session.call_tool("exec", {"code": source})
            latencies.append(time.perf_counter() - started)
            await _to_the_end(session.call_tool, result, number, latencies)


async def _stateless_client(url: str, programs: int, steps: int, latencies: list[float]) -> None:
    """:func:`_client` with the SDK's default client (stateless): the session's handle
    passed back to each ``exec``."""
    source = PROGRAM.replace("STEPS", str(steps))
    session: str | None = None
    async with Client(url) as client:
        for number in range(1, programs + 1):
            arguments = (
                {"code": source} if session is None else {"code": source, "session": session}
            )
            started = time.perf_counter()
            result = await client.call_tool("exec", arguments)
            latencies.append(time.perf_counter() - started)
            session = (result.structured_content or {}).get("session", session)
            await _to_the_end(client.call_tool, result, number, latencies)


async def _load(
    urls: Sequence[str], clients: int, programs: int, steps: int, stateless: bool = False
) -> tuple[list[float], float]:
    """``clients`` clients at once, client i on ``urls[i % len(urls)]``: each request's
    latency (seconds) and the wall time."""
    latencies: list[float] = []
    started = time.perf_counter()
    run = _stateless_client if stateless else _client
    async with trio.open_nursery() as nursery:
        for index in range(clients):
            url = urls[index % len(urls)]
            nursery.start_soon(run, url, programs, steps, latencies)
    return latencies, time.perf_counter() - started


def _row(
    servers: int, clients: int, path: str, rounds: list[tuple[list[float], float]]
) -> dict[str, Any]:
    """One line of the table: every round's requests pooled; the per-round p50s and
    throughputs, to show how much the rounds differ."""
    pooled = summarize([sample for latencies, _ in rounds for sample in latencies], scale=1e3)
    p50s = [summarize(latencies, scale=1e3).median for latencies, _ in rounds]
    rates = [len(latencies) / wall for latencies, wall in rounds]
    return {
        "servers": servers,
        "clients": clients,
        "path": path,
        "requests": pooled.n,
        "p50_ms": pooled.median,
        "p99_ms": pooled.p99,
        "round_p50_ms": p50s,
        "requests_per_s": statistics.median(rates),
    }


def _free_port_block(count: int) -> int:
    for _ in range(50):
        base = random.randrange(20000, 60000 - count)
        try:
            for port in range(base, base + count):
                with socket.socket() as sock:
                    sock.bind(("127.0.0.1", port))
        except OSError:
            continue
        return base
    raise RuntimeError("no block of free ports on 127.0.0.1")


@contextmanager
def _cluster(servers: int) -> Iterator[tuple[str, list[str]]]:
    """``local.sh servers PORT``: (the balancer's URL, the servers' URLs)."""
    port = _free_port_block(servers + 2)  # the balancer, the servers, the store
    env = {
        **os.environ,
        "CODE_MODE_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    command = ["bash", str(LOCAL_SH), str(servers), str(port), "--tools", "bench.deploy:TOOLS"]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True
    )
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith("local.sh: ready"):
                break
        else:
            raise RuntimeError("local.sh ended before it was ready")
        balancer = f"http://127.0.0.1:{port}/mcp"
        yield balancer, [f"http://127.0.0.1:{port + i}/mcp" for i in range(1, servers + 1)]
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", default="1,2,3", help="server counts (default 1,2,3)")
    parser.add_argument(
        "--clients", default="1,30", help="clients at once, per load (default 1,30)"
    )
    parser.add_argument("--programs", type=int, default=10, help="programs per client (10)")
    parser.add_argument("--steps", type=int, default=3, help="yields per program (3)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each path (3)")
    parser.add_argument(
        "--paths",
        default="direct,balancer,stateless",
        help="paths to measure (default direct,balancer,stateless)",
    )
    parser.add_argument("--out", type=Path, help="write deploy.json into this folder")
    args = parser.parse_args(argv)
    counts = [int(count) for count in args.servers.split(",")]
    loads = [int(clients) for clients in args.clients.split(",")]
    print(f"before: {_uptime()}  ({os.cpu_count()} CPUs)", flush=True)
    rows: list[dict[str, Any]] = []
    for servers in counts:
        with _cluster(servers) as (balancer, direct):
            # Warm up each server's isolates (and HAProxy's connections) first.
            trio.run(_load, [balancer], max(loads), 1, args.steps)
            for clients in loads:
                everywhere = {"direct": direct, "balancer": [balancer], "stateless": [balancer]}
                paths = [(path, everywhere[path]) for path in args.paths.split(",")]
                runs: dict[str, list[tuple[list[float], float]]] = {path: [] for path, _ in paths}
                for number in range(args.rounds):  # interleaved, the order alternating
                    for path, urls in paths if number % 2 == 0 else paths[::-1]:
                        load = (urls, clients, args.programs, args.steps, path == "stateless")
                        runs[path].append(trio.run(_load, *load))
                for path, rounds in runs.items():
                    rows.append(_row(servers, clients, path, rounds))
                    print(json.dumps(rows[-1]), flush=True)
    print(f"after: {_uptime()}", flush=True)
    print()
    print("| servers | clients | path | requests | p50 ms | p99 ms | p50 per round | requests/s |")
    print("|---:|---:|---|---:|---:|---:|---|---:|")
    for row in rows:
        per_round = ", ".join(f"{p50:.1f}" for p50 in row["round_p50_ms"])
        print(
            f"| {row['servers']} | {row['clients']} | {row['path']} | {row['requests']} "
            f"| {row['p50_ms']:.1f} | {row['p99_ms']:.1f} | {per_round} "
            f"| {row['requests_per_s']:.0f} |"
        )
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "deploy.json").write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
