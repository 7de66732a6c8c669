"""The texts of calls that reached no program say what happened and what to do, and
begin with the reference's own words (``exec cell <id> not found``)."""

from __future__ import annotations

from code_mode import BusyObserver, CellId, MissingCell, ShuttingDown
from code_mode.model_tools.error_texts import (
    call_error_text,
    missing_cell_text,
    missing_session_text,
)


def test_a_missing_cell_in_one_session() -> None:
    text = missing_cell_text("3")
    assert text.startswith(f"{MissingCell(CellId('3'))}: ")  # the reference's phrase
    assert "already ended and its final result was returned" in text
    assert "started in another session" in text
    assert "expired" not in text  # a session's cells do not expire
    assert text.endswith("run the program again with `exec`.")
    assert call_error_text(MissingCell(CellId("3"))) == text


def test_a_missing_cell_handle_names_deployments_and_expiry() -> None:
    text = missing_cell_text("h" * 24, other_deployments=True, expires_after=1800.0)
    assert text.startswith(f"exec cell {'h' * 24} not found: ")
    assert (
        ", it belongs to another session or server deployment, or it expired after 1800 s "
        "without a call." in text
    )
    assert "expired after 0.5 s" in missing_cell_text("x", expires_after=0.5)


def test_a_missing_session_says_its_values_are_gone_and_how_to_go_on() -> None:
    text = missing_session_text("abc", expires_after=600)
    assert text.startswith("code mode session abc not found: it expired after 600 s ")
    assert "the values it stored are not available" in text
    assert "Call `exec` again without `session` to start a new session" in text
    never = missing_session_text("abc")  # sessions that never expire
    assert never.startswith("code mode session abc not found: it belongs to another server")


def test_other_errors() -> None:
    busy = call_error_text(BusyObserver(CellId("2")))
    assert busy.startswith("exec cell 2 already has an active observer: ")
    assert busy.endswith("Wait for that call to return, then call `wait` again.")
    assert call_error_text(ShuttingDown()) == str(ShuttingDown())
