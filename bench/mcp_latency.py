"""MCP round trip per ``exec``: ``text("ok")`` through the MCP SDK's client to
``code-mode mcp serve``, over stdio and streamable HTTP, warm, one checkout against
another.

    python -m bench.mcp_latency                              # this checkout
    python -m bench.mcp_latency --checkout /tmp/before --checkout .   # before and after
    python -m bench.mcp_latency --rounds 3 --calls 200 --warmup 20
    python -m bench.mcp_latency --transport stdio --store memory://   # a store of choice

What one sample is: the client's ``call_tool("exec", {"code": 'text("ok")'})`` from
the call to its result, on a session already warm (``--warmup`` calls first, not
counted), the calls one after another. So it is the whole per-call cost a model's host
sees: the MCP SDK's client, the JSON-RPC framing, the server's session lookup, a fresh
cell on a warm isolate, and the answer back. Beside it, the CPU time per call of the
server's process tree (the server and its worker processes), which a loaded machine
blurs much less than it does the times.

Each (round, checkout, transport) is a child process of its own (``--child``), which
starts the server from that checkout (its folder first on ``PYTHONPATH`` and as the
working directory, so the server imports that checkout's ``code_mode``; the child says
which it imported) with this interpreter, so two checkouts compare in the same venv.
The order of the checkouts alternates from round to round, so drift of the machine hits
both. Over HTTP the client connects in ``mode="legacy"`` (the initialize handshake):
before issue 27 the server advertised a revision it then refused to clients in "auto"
mode; over stdio the client keeps its default mode. The negotiated protocol version is
reported. ``--store URL`` is given to every server (without it, the server's default:
a SQLite file under a fresh ``$XDG_STATE_HOME`` per measurement, so no run sees
another's state).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as ``python bench/mcp_latency.py``
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.child_process import ROOT, python_module, run_child
from bench.provenance import machine
from bench.stats import percentile, tree_cpu_seconds

PROGRAM = 'text("ok")'
TRANSPORTS = ("stdio", "http")


def _server_env(checkout: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["PYTHONPATH"] = str(checkout)
    return env


def _serve_args(*extra: str) -> list[str]:
    return ["-m", "code_mode.cli", "mcp", "serve", *extra]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _wait_for_port(port: int, server: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the HTTP server exited with code {server.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)  # a child's start-up poll, off any event loop
    raise RuntimeError(f"the HTTP server did not listen on port {port} within {timeout:.0f} s")


async def _calls(client: Any, calls: int, warmup: int) -> dict[str, Any]:
    """The measured calls' times, and the CPU time per call of the server's process
    tree (this child's tree but the child itself: the server, its worker processes)."""
    samples: list[float] = []
    tree = own = 0.0
    for index in range(warmup + calls):
        if index == warmup:
            tree, own = tree_cpu_seconds(), time.process_time()
        start = time.perf_counter()
        result = await client.call_tool("exec", {"code": PROGRAM})
        elapsed = time.perf_counter() - start
        texts = [getattr(block, "text", "") for block in result.content]
        # The last line: all of the text is in one item (in several before issue 35).
        if result.is_error or not texts or texts[-1].rsplit("\n", 1)[-1] != "ok":
            raise RuntimeError(f"unexpected exec result: {result}")
        if index >= warmup:
            samples.append(elapsed)
    server_cpu = (tree_cpu_seconds() - tree) - (time.process_time() - own)
    return {"samples": samples, "server_cpu_per_call": server_cpu / calls}


async def _measure(
    transport: str, checkout: Path, calls: int, warmup: int, store: str | None
) -> dict[str, Any]:
    import tempfile

    from mcp import Client, StdioServerParameters

    env = _server_env(checkout)
    env["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="code-mode-bench-")
    stored = ("--store", store) if store else ()
    if transport == "stdio":
        parameters = StdioServerParameters(
            command=sys.executable, args=_serve_args(*stored), env=env, cwd=str(checkout)
        )
        async with Client(parameters) as client:
            measured = await _calls(client, calls, warmup)
            measured["protocol"] = client.protocol_version
        return measured
    port = _free_port()
    command = [sys.executable, *_serve_args("--http", f"127.0.0.1:{port}", *stored)]
    server = subprocess.Popen(  # noqa: ASYNC220 - the child's one server, started once
        command, cwd=checkout, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        _wait_for_port(port, server)
        async with Client(f"http://127.0.0.1:{port}/mcp", mode="legacy") as client:
            measured = await _calls(client, calls, warmup)
            measured["protocol"] = client.protocol_version
    finally:
        server.terminate()
        server.wait(timeout=60)
    return measured


def child(
    transport: str, checkout: Path, calls: int, warmup: int, store: str | None = None
) -> dict[str, Any]:
    """One measurement (in the child): the samples, the protocol version and which
    ``code_mode`` the server imports."""
    import anyio

    where = subprocess.run(
        [sys.executable, "-c", "import code_mode; print(code_mode.__file__)"],
        cwd=checkout,
        env=_server_env(checkout),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    result = anyio.run(_measure, transport, checkout, calls, warmup, store)
    result["code_mode"] = where
    return result


def _summary(samples: Sequence[float]) -> dict[str, float]:
    return {
        "median_ms": percentile(samples, 0.5) * 1000,
        "p99_ms": percentile(samples, 0.99) * 1000,
    }


def run(
    checkouts: Sequence[Path],
    rounds: int,
    calls: int,
    warmup: int,
    transports: Sequence[str] = TRANSPORTS,
    store: str | None = None,
) -> dict[str, Any]:
    """Every round: each checkout (alternating order), each transport, in a child."""
    results: dict[str, Any] = {
        "machine": machine(),
        "calls": calls,
        "warmup": warmup,
        "store": store or "the server's default",
    }
    per: dict[str, dict[str, list[dict[str, Any]]]] = {
        str(checkout): {transport: [] for transport in transports} for checkout in checkouts
    }
    for index in range(rounds):
        order = list(checkouts) if index % 2 == 0 else list(reversed(checkouts))
        for checkout in order:
            for transport in transports:
                spec = json.dumps(
                    {
                        "transport": transport,
                        "checkout": str(checkout),
                        "calls": calls,
                        "warmup": warmup,
                        "store": store,
                    }
                )
                measured = run_child(
                    python_module("bench.mcp_latency", "--child", spec),
                    timeout=600,
                    what=f"mcp latency ({transport}, {checkout})",
                )
                row = {
                    **_summary(measured["samples"]),
                    "server_cpu_ms": measured["server_cpu_per_call"] * 1000,
                    "protocol": measured["protocol"],
                    "code_mode": measured["code_mode"],
                    "load": os.getloadavg()[0],
                }
                per[str(checkout)][transport].append(row)
                print(f"round {index + 1} {checkout} {transport}: {row}", file=sys.stderr)
    results["rounds"] = per
    return results


def _table(results: dict[str, Any]) -> str:
    lines = [
        "| checkout | transport | median ms, per round | p99 ms, per round"
        " | best median | best p99 | server CPU ms per call, per round |",
        "|---|---|---|---|---|---|---|",
    ]
    for checkout, transports in results["rounds"].items():
        for transport, rows in transports.items():
            medians = [row["median_ms"] for row in rows]
            p99s = [row["p99_ms"] for row in rows]
            cpus = [row["server_cpu_ms"] for row in rows]
            lines.append(
                f"| {checkout} | {transport} ({rows[0]['protocol']}) "
                f"| {' / '.join(f'{m:.2f}' for m in medians)} "
                f"| {' / '.join(f'{p:.2f}' for p in p99s)} "
                f"| {min(medians):.2f} | {min(p99s):.2f} "
                f"| {' / '.join(f'{cpu:.2f}' for cpu in cpus)} |"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="MCP round trip per exec, per checkout")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--checkout", type=Path, action="append", help="default: this one")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--out", type=Path, help="also write the results as JSON here")
    parser.add_argument("--transport", choices=TRANSPORTS, action="append", help="default: both")
    parser.add_argument("--store", help="the servers' --store (default: theirs)")
    args = parser.parse_args(argv)
    if args.child:
        spec = json.loads(args.child)
        result = child(
            spec["transport"],
            Path(spec["checkout"]),
            spec["calls"],
            spec["warmup"],
            spec.get("store"),
        )
        print(json.dumps(result))
        return 0
    checkouts = [path.resolve() for path in (args.checkout or [ROOT])]
    transports = args.transport or TRANSPORTS
    results = run(checkouts, args.rounds, args.calls, args.warmup, transports, args.store)
    print(json.dumps(results["machine"]))
    print(_table(results))
    if args.out is not None:
        args.out.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
