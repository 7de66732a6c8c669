"""Developer tasks: ``nox -s tests``, ``lint``, ``typecheck``, ``bench``, ``soak``."""

from __future__ import annotations

import nox

nox.options.sessions = ["tests", "lint", "typecheck"]
nox.options.reuse_existing_virtualenvs = True


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite (what CI runs)."""
    session.install("-e", ".[test]")
    session.run("pytest", "-q", *session.posargs)


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
def soak(session: nox.Session) -> None:
    """Long reliability runs (thousands of cells), marked slow."""
    session.install("-e", ".[test]")
    session.run("pytest", "-q", "-m", "slow", *session.posargs)
