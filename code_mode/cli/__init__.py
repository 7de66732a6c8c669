"""The ``code-mode`` command: run a JavaScript file as a cell, printing each event.

    code-mode run examples/hello.js
    code-mode run --mcp-config servers.json prog.js      # plus MCP servers' tools
    code-mode mcp serve --tools pkg.module:tools [--mcp-config servers.json] [--http HOST:PORT]
                        [--push]
    code-mode mcp serve --tools path/to/tools.py:TOOLS

The cell gets a few harmless demo tools (``echo``, ``add``, ``sleep``, ``weather``) so a
newcomer can see tool calls, yields and completion without writing any Python.

Subcommands are added in :func:`build_parser`, one ``add_parser`` each; ``run`` is the
first. Exit status: 0 when the program completed, 1 when it failed or was terminated,
2 for a usage error, 124 when ``--timeout`` terminated it, 130 on Ctrl-C. A server
stopped by SIGTERM drains first (``docs/deploy.md``), then exits with 0.
The MCP commands need the ``mcp`` extra (``code_mode.integrations.mcp``).
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

import trio

from .. import __version__
from .config_options import add_runtime_options, add_yield_options, runtime_config
from .demo_tools import demo_tools_help
from .exit_status import EXIT_INTERRUPTED, EXIT_TIMEOUT, EXIT_USAGE, is_interrupt
from .run import run_source
from .startup_errors import describe, startup_error

__all__ = ["build_parser", "main", "run_source"]


class _Parser(argparse.ArgumentParser):
    """A parser whose usage errors are one line (the usage is in ``--help``)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The command line: one subparser per subcommand."""
    parser = _Parser(
        prog="code-mode",
        description="Run LLM-style JavaScript programs as code_mode cells.",
        epilog=demo_tools_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = commands.add_parser(
        "run",
        help="run a JavaScript file as a cell with demo tools, printing each event",
        description="Run a JavaScript file as a cell with demo tools, printing each event.",
        epilog=demo_tools_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("file", type=Path, help="the program (JavaScript source)")
    run.add_argument(
        "--yield-seconds",
        type=_seconds,
        default=10.0,
        help="report partial output at least this often (default 10)",
    )
    run.add_argument(
        "--timeout",
        type=_seconds,
        default=math.inf,
        metavar="SECONDS",
        help=f"terminate the program after this long, print what it produced and exit "
        f"with status {EXIT_TIMEOUT} (default: no limit)",
    )
    mcp_config_help = "also run the MCP servers of this mcpServers JSON file (needs code-mode[mcp])"
    run.add_argument("--mcp-config", type=Path, help=mcp_config_help)
    add_runtime_options(run)
    mcp = commands.add_parser("mcp", help="MCP integration (needs code-mode[mcp])")
    serve = mcp.add_subparsers(dest="mcp_command", required=True).add_parser(
        "serve", help="serve exec/wait to MCP clients (stdio, or streamable HTTP with --http)"
    )
    serve.add_argument(
        "--tools",
        action="append",
        metavar="MODULE:ATTR",
        help="nested tools: pkg.module:attr (imported from the current folder too) or "
        "path/to/file.py:attr (from any folder); may be repeated",
    )
    serve.add_argument("--mcp-config", type=Path, help="MCP servers whose tools programs call")
    serve.add_argument("--http", metavar="HOST:PORT", help="serve streamable HTTP at /mcp")
    serve.add_argument(
        "--push",
        action="store_true",
        help="keep the result of a program that finishes after `Script running` as the "
        "resource code-mode://cells/<id> and notify subscribed clients, so no one polls",
    )
    serve.add_argument(
        "--store",
        metavar="URL",
        help="where sessions, cells and stored values live, so that a server started "
        "anew (or per call) resumes them: sqlite:///path/to/file.db (shared by the "
        "servers of one machine; default: $XDG_STATE_HOME/code-mode/store.db, else "
        "~/.local/state/code-mode/store.db), memory:// (nothing on disk: lost when "
        "this process exits), redis://[:password@]host:port/db or rediss:// (TLS; "
        "servers on many machines); see docs/deploy.md",
    )
    # The limits of one server process (ServerLimits; docs/deploy.md). Their defaults
    # live there (this module must not import the MCP extra); the help repeats them.
    limits = serve.add_argument_group("limits of this server process (see docs/deploy.md)")
    limits.add_argument(
        "--max-sessions",
        type=int,
        metavar="N",
        help="code mode sessions open at once (default 64)",
    )
    limits.add_argument(
        "--session-idle-timeout",
        type=_seconds_or_never,
        metavar="SECONDS",
        help="close a session after this long without a request, terminating its "
        "programs; `never` to keep sessions (default 1800)",
    )
    limits.add_argument(
        "--max-request-body-bytes",
        type=int,
        metavar="N",
        help="largest HTTP request body (default 4194304, 4 MiB)",
    )
    limits.add_argument(
        "--drain-deadline",
        type=float,
        metavar="SECONDS",
        help="on SIGTERM, how long running programs may take to finish before they are "
        "terminated and the server exits (default 60)",
    )
    limits.add_argument(
        "--handover-grace",
        type=float,
        metavar="SECONDS",
        help="on SIGTERM with a shared --store, how long a stateless program's tool calls "
        "in flight may take to finish before it is handed to another server (default 10)",
    )
    limits.add_argument(
        "--exec-retry-window",
        type=float,
        metavar="SECONDS",
        help="how long an exec its client abandoned (a client timeout) waits for the "
        "client's retry, which is answered from the same program (default 120)",
    )
    # The MCP server's default yield cap (DEFAULT_MCP_MAX_YIELD_TIME_MS; repeated here,
    # as this module must not import the MCP extra).
    add_yield_options(serve, 4000)
    add_runtime_options(serve)
    return parser


def _seconds(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, 0 or more, got {text}")
    return value


def _seconds_or_never(text: str) -> float | str:
    if text == "never":
        return text
    return float(text)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "mcp":
        try:
            from .mcp import serve_main
        except ImportError as error:
            print(f"code-mode: {error}", file=sys.stderr)
            return EXIT_USAGE
        return serve_main(args)
    try:
        source = args.file.read_text(encoding="utf-8")
        config = runtime_config(args)
    except (OSError, ValueError, TypeError) as error:
        print(f"code-mode: {describe(error)}", file=sys.stderr)
        return EXIT_USAGE
    run_file = functools.partial(
        run_source,
        source,
        yield_seconds=args.yield_seconds,
        config=config,
        timeout=args.timeout,
        mcp_config=args.mcp_config,
    )
    try:
        return trio.run(run_file)
    except BaseException as error:
        # trio has cancelled everything and the session has closed its isolates and
        # worker by now; a Ctrl-C, or a start-up error (a missing extra, a bad
        # config), may arrive wrapped in the session's task groups.
        if is_interrupt(error):
            print("code-mode: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
        found = startup_error(error)
        if found is None:
            raise
        print(f"code-mode: {describe(found)}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
