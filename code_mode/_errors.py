"""The errors of the session runtime.

Every error derives from :class:`CodeModeError`. ``str(error)`` is the exact message of
the reference design (models and tests read it), and errors compare equal when their
class and cell id (or message) are equal, so a test may write
``assert error == MissingCell(CellId("3"))``.
"""

from __future__ import annotations

from ._types import CellId


class CodeModeError(Exception):
    """Base class of every error raised by ``code_mode``."""

    cell_id: CellId | None

    def __init__(self, message: str, cell_id: CellId | None = None) -> None:
        super().__init__(message)
        self.cell_id = cell_id

    @property
    def message(self) -> str:
        return str(self.args[0])

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, CodeModeError)
        return self.cell_id == other.cell_id and self.message == other.message

    def __hash__(self) -> int:
        return hash((type(self), self.cell_id, self.message))

    def __repr__(self) -> str:
        if self.cell_id is not None:
            return f"{type(self).__name__}({self.cell_id!r})"
        return f"{type(self).__name__}({self.message!r})"


class ShuttingDown(CodeModeError):
    """The session is closing: no new cell is admitted."""

    def __init__(self) -> None:
        super().__init__("code mode session is shutting down")

    def __repr__(self) -> str:
        return "ShuttingDown()"


class DuplicateCell(CodeModeError):
    """A cell with this id already exists."""

    def __init__(self, cell_id: CellId) -> None:
        super().__init__(f"exec cell {cell_id} already exists", cell_id)


class MissingCell(CodeModeError):
    """No live cell has this id (never existed, finished, or closing)."""

    def __init__(self, cell_id: CellId) -> None:
        super().__init__(f"exec cell {cell_id} not found", cell_id)


class BusyObserver(CodeModeError):
    """Another observation of this cell is still waiting."""

    def __init__(self, cell_id: CellId) -> None:
        super().__init__(f"exec cell {cell_id} already has an active observer", cell_id)


class AlreadyTerminating(CodeModeError):
    """A termination of this cell is already under way (or its completion was claimed)."""

    def __init__(self, cell_id: CellId) -> None:
        super().__init__(f"exec cell {cell_id} is already terminating", cell_id)


class RuntimeFailure(CodeModeError):
    """The engine failed (for example V8 could not start an isolate)."""

    def __init__(self, message: str, cell_id: CellId | None = None) -> None:
        super().__init__(message, cell_id)
