"""A cell's state machine (``_cell/state.py``) on its own: the moves it allows, how a
program's end is recorded once, and what each phase answers."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from code_mode._cell.state import TRANSITIONS, CellState, Failure, Phase
from code_mode._engine import Finished


def state_in(*path: Phase) -> CellState:
    state = CellState()
    for phase in path:
        state.move(phase)
    return state


def test_every_phase_has_its_moves_and_only_claimed_and_closed_are_final() -> None:
    assert set(TRANSITIONS) == set(Phase)
    final = {phase for phase, moves in TRANSITIONS.items() if not moves}
    assert final == {Phase.CLAIMED, Phase.CLOSED}


def test_a_move_outside_the_table_is_refused() -> None:
    state = state_in(Phase.TERMINATING)
    with pytest.raises(AssertionError):
        state.move(Phase.COMPLETED)
    assert state.phase is Phase.TERMINATING


def test_the_first_end_wins_and_moves_a_live_program_to_ending() -> None:
    state = CellState()
    assert state.program_live
    assert state.record_end(Failure("out of memory"))
    assert state.phase is Phase.ENDING and not state.program_live
    assert not state.record_end(Finished(None, {}))
    assert state.end == Failure("out of memory")


def test_an_end_during_a_termination_is_recorded_but_does_not_move_it() -> None:
    state = state_in(Phase.TERMINATING)
    assert state.record_end(Failure("crashed"))
    assert state.phase is Phase.TERMINATING


@pytest.mark.parametrize(
    ("path", "keeps_output"),
    [
        ((), True),
        ((Phase.ENDING,), True),
        ((Phase.TERMINATING,), True),
        ((Phase.ENDING, Phase.COMPLETED), False),
        ((Phase.ENDING, Phase.COMPLETED, Phase.PUSHING), False),
        ((Phase.ENDING, Phase.COMPLETED, Phase.CLAIMED), False),
    ],
)
def test_output_is_kept_until_the_outcome_is_settled(
    path: tuple[Phase, ...], keeps_output: bool
) -> None:
    assert state_in(*path).keeps_output is keeps_output


def test_nothing_after_a_broken_limit_is_kept_even_while_terminating() -> None:
    state = CellState()
    state.record_end(Failure("too much output", cut=True))
    assert not state.keeps_output
    state.move(Phase.TERMINATING)
    assert not state.keeps_output


def test_what_each_phase_answers() -> None:
    answers = {
        phase: (
            state.program_live,
            state.program_ending,
            state.observable,
            state.result_pending,
        )
        for phase, state in {
            Phase.RUNNING: state_in(),
            Phase.ENDING: state_in(Phase.ENDING),
            Phase.TERMINATING: state_in(Phase.TERMINATING),
            Phase.COMPLETED: state_in(Phase.ENDING, Phase.COMPLETED),
            Phase.CLAIMED: state_in(Phase.ENDING, Phase.COMPLETED, Phase.CLAIMED),
            Phase.PUSHING: state_in(Phase.ENDING, Phase.COMPLETED, Phase.PUSHING),
            Phase.CLOSED: state_in(Phase.TERMINATING, Phase.CLOSED),
        }.items()
    }
    assert answers == {
        Phase.RUNNING: (True, True, True, True),
        Phase.ENDING: (False, True, True, True),
        Phase.TERMINATING: (False, False, False, True),
        Phase.COMPLETED: (False, False, True, True),
        Phase.CLAIMED: (False, False, False, False),
        Phase.PUSHING: (False, False, False, False),
        Phase.CLOSED: (False, False, False, False),
    }


async def test_waiting_for_a_phase_returns_once_the_cell_gets_there() -> None:
    state = CellState()
    reached: list[Phase] = []

    async def wait() -> None:
        await state.wait_for(Phase.COMPLETED)
        reached.append(state.phase)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(wait)
        await trio.testing.wait_all_tasks_blocked()
        state.record_end(Finished(None, {}))
        await trio.testing.wait_all_tasks_blocked()
        assert reached == []
        state.move(Phase.COMPLETED)
    assert reached == [Phase.COMPLETED]
