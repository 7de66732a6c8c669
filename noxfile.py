"""Developer tasks: ``nox -s tests``, ``lint``, ``typecheck``, ``bench``, ``peers``,
``soak``, ``hosts_mcp1``."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nox

nox.options.sessions = ["tests", "lint", "typecheck"]
nox.options.reuse_existing_virtualenvs = True


#: The MCP project's Node servers and Inspector the MCP tests run against, pinned here.
NODE_TOOLS = Path(__file__).parent / ".ci" / "node"


def install_node_tools(session: nox.Session) -> None:
    """``npm ci`` the pinned Node MCP servers, so that a newcomer's run of the test
    command is CI's; without ``npm`` the MCP tests against them are skipped, and this
    says so up front."""
    if shutil.which("npm") is None:
        session.warn(
            "npm not found: the MCP tests against the Node servers will be skipped "
            "(install Node.js and npm to run them)"
        )
        return
    if (NODE_TOOLS / "node_modules" / ".package-lock.json").is_file():
        lock = (NODE_TOOLS / "package-lock.json").stat().st_mtime
        installed = (NODE_TOOLS / "node_modules" / ".package-lock.json").stat().st_mtime
        if installed >= lock:
            return  # already installed from this lock file
    session.run(
        "npm", "ci", "--prefix", str(NODE_TOOLS), "--no-audit", "--no-fund", "--loglevel=error",
        external=True,
    )  # fmt: skip


#: What some tests run against, outside Python: the program, what its tests are, and
#: the one command that installs it (the tests skip, naming it, where it is missing).
SYSTEM_TOOLS = (
    ("haproxy", "the load-balancer tests (tests/deploy/)", "apt-get install haproxy"),
    ("redis-server", "the Redis store tests", "apt-get install redis-server"),
    ("npm", "the tests against the Node MCP servers", "apt-get install npm"),
)


def say_what_will_be_skipped(session: nox.Session) -> None:
    """One line up front naming the tests that will be skipped and what installs
    their tools, rather than skips found at the end of the run."""
    missing = [(what, how) for tool, what, how in SYSTEM_TOOLS if shutil.which(tool) is None]
    if missing:
        session.warn(
            "will skip "
            + "; ".join(what for what, _ in missing)
            + ": to run them, "
            + " && ".join(how for _, how in missing)
        )


def test_workers() -> str:
    """pytest-xdist workers: ``CODE_MODE_TEST_WORKERS``, else one more than the cores
    (a test spends much of its time waiting on a child process or a program)."""
    return os.environ.get("CODE_MODE_TEST_WORKERS", str((os.cpu_count() or 1) + 1))


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite (what CI runs), with the Node MCP servers it tests against, on
    several workers (pytest-xdist; ``-n 0`` in the arguments runs it in one process)."""
    # The hosts (LlamaIndex, Google ADK) only here: the type check and the soak do not
    # need their many packages.
    session.install("-e", ".[test,hosts]")
    say_what_will_be_skipped(session)
    install_node_tools(session)
    session.run("pytest", "-q", "-n", test_workers(), "--dist", "worksteal", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff: lint and formatting."""
    session.install("ruff")
    session.run("ruff", "check", "code_mode", "tests", "bench", "examples", "noxfile.py")
    session.run("ruff", "format", "--check", "code_mode", "tests", "bench", "examples")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict on the library."""
    session.install("-e", ".[test]", "mypy")
    session.run("mypy", "--strict", "code_mode")


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks against raw mini-racer in the same run (not part of the tests)."""
    session.install("-e", ".", "matplotlib")
    session.run("python", "-m", "bench.run", *session.posargs)


@nox.session
def peers(session: nox.Session) -> None:
    """code_mode beside pydantic-monty and isolated-vm, installed in this session's
    virtualenv only. isolated-vm needs Node.js and npm, and npm builds it from source
    where no prebuilt binary can be downloaded (a few minutes, once)."""
    session.install("-e", ".", "pydantic-monty")
    extra: list[str] = []
    if shutil.which("npm"):
        folder = Path(session.create_tmp()) / "isolated-vm"
        if not (folder / "node_modules" / "isolated-vm" / "out").is_dir():
            folder.mkdir(exist_ok=True)
            session.run("npm", "install", "--prefix", str(folder), "isolated-vm", external=True)
        extra = ["--isolated-vm", str(folder)]
    session.run("python", "-m", "bench.peers", *extra, *session.posargs)


@nox.session
def soak(session: nox.Session) -> None:
    """Long reliability runs (thousands of cells), marked slow."""
    session.install("-e", ".[test]")
    # One worker process per soak test (one per isolation mode): each measures its own
    # process's memory, so none shares a process with another test.
    session.run("pytest", "-q", "-m", "slow", "-n", "2", *session.posargs)


#: MCP hosts that cannot share an environment with ``code-mode[mcp]`` (MCP SDK 2.x):
#: their newest releases need the SDK 1.x, or install beside 2.x and fail to import.
MCP1_HOSTS = (
    "langchain-mcp-adapters>=0.3",
    "langchain>=1",  # create_agent: the agent loop that calls the adapters' tools
    "smolagents[mcp]>=1.26",
    "mcp>=1.24,<2",
)


@nox.session
def hosts_mcp1(session: nox.Session) -> None:
    """LangChain's and smolagents' MCP adapters as clients of ``code-mode mcp serve``
    (tests/mcp_server/test_hosts_mcp1.py): they run in this session's virtualenv, with
    the MCP SDK 1.x; the server runs from ``CODE_MODE_SERVER`` (a ``code-mode``
    command of an environment with ``code-mode[mcp]``), else from one this session
    builds beside its own."""
    # code-mode without extras: the tests' conftest and helpers import it, not the SDK.
    session.install("-e", ".", "pytest>=8", "pytest-trio>=0.8", *MCP1_HOSTS)
    server = os.environ.get("CODE_MODE_SERVER")
    if not server:
        folder = Path(session.create_tmp()) / "server"
        if not (folder / "bin" / "code-mode").exists():
            session.run_install("python", "-m", "venv", str(folder))
        # pytest too: the served tools' module (tests/mcp_support.py) imports it.
        session.run_install(
            str(folder / "bin" / "python"), "-m", "pip", "install", "-q", "-e", ".[mcp]",
            "pytest>=8", external=True,
        )  # fmt: skip
        server = str(folder / "bin" / "code-mode")
    session.run(
        "pytest", "-q", "-p", "no:cacheprovider", "tests/mcp_server/test_hosts_mcp1.py",
        *session.posargs, env={"CODE_MODE_SERVER": server},
    )  # fmt: skip
