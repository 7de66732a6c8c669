"""``code-mode mcp serve``'s limit options: they become :class:`ServerLimits`, and the
help states the defaults ServerLimits has (the parser cannot import them: it must
work without the MCP extra)."""

from __future__ import annotations

import re

import pytest

from code_mode.cli import build_parser, main
from code_mode.cli.mcp import server_limits
from code_mode.mcp_server import ServerLimits


def test_the_help_states_the_defaults_of_server_limits(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["mcp", "serve", "--help"])
    help_text = capsys.readouterr().out
    text = " ".join(help_text[help_text.index("limits of this server process") :].split())
    defaults = ServerLimits()
    for option, value in [
        ("--max-sessions", defaults.max_sessions),
        ("--session-idle-timeout", defaults.session_idle_timeout),
        ("--max-request-body-bytes", defaults.max_request_body_bytes),
        ("--drain-deadline", defaults.drain_deadline),
        ("--handover-grace", defaults.handover_grace),
        ("--exec-retry-window", defaults.exec_retry_window),
    ]:
        shown = re.search(rf"{option} \S+ .*?\(default (\d+)", text)
        assert shown is not None, option
        assert float(shown.group(1)) == value, option


def test_the_options_become_server_limits() -> None:
    options = ["--max-sessions", "8", "--session-idle-timeout", "never"]
    options += ["--max-request-body-bytes", "1000", "--drain-deadline", "2.5"]
    options += ["--handover-grace", "1.5"]
    args = build_parser().parse_args(["mcp", "serve", *options])
    limits = server_limits(args)
    assert limits == ServerLimits(
        max_sessions=8,
        session_idle_timeout=None,
        max_request_body_bytes=1000,
        drain_deadline=2.5,
        handover_grace=1.5,
    )
    assert server_limits(build_parser().parse_args(["mcp", "serve"])) == ServerLimits()


def test_a_bad_limit_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mcp", "serve", "--http", "127.0.0.1:0", "--max-sessions", "0"]) == 2
    assert "ServerLimits.max_sessions must be a positive integer" in capsys.readouterr().err
