"""A cell's output buffer: what the program output that nobody has received yet, within its limits.

Besides the buffer proper it keeps the *initial yield*: a ``yield_control()`` the
program made before anyone observed it (the reference keeps that batch apart, so the
first observation that yields gets exactly it). Every final event (a frontier's
``Pending``, ``Terminated``, ``Completed``) hands over the initial yield first, then
the buffer: :meth:`OutputBuffer.take_all`.
"""

from __future__ import annotations

from .._config import RuntimeConfig
from .._types import Completed, OutputItem

__all__ = ["OutputBuffer"]


class OutputBuffer:
    """The output of one cell's program that nobody has received yet."""

    def __init__(self, config: RuntimeConfig) -> None:
        self._config = config
        self.items: list[OutputItem] = []
        self._bytes = 0
        self._initial_yield: list[OutputItem] | None = None
        #: Items handed to observers so far (a stateless server records it, so that a
        #: cell resumed elsewhere does not hand them again).
        self.taken = 0

    def add(self, item: OutputItem, size: int) -> str | None:
        """Keep ``item`` (``size`` bytes); the limit it broke, if it broke one."""
        self.items.append(item)
        self._bytes += size
        if self._bytes > self._config.max_output_bytes:
            return (
                f"exec cell exceeded its limit of {self._config.max_output_bytes} "
                "buffered output bytes (RuntimeConfig.max_output_bytes)"
            )
        if len(self.items) > self._config.max_output_items:
            return (
                f"exec cell exceeded its limit of {self._config.max_output_items} "
                "buffered output items (RuntimeConfig.max_output_items)"
            )
        return None

    def take(self) -> list[OutputItem]:
        """The buffer, emptied (the initial yield stays)."""
        items, self.items = self.items, []
        self._bytes = 0
        self.taken += len(items)
        return items

    def take_all(self) -> list[OutputItem]:
        """The initial yield, then the buffer, both emptied."""
        return self._take_initial_yield() + self.take()

    def keep_initial_yield(self) -> None:
        """The program yielded before anyone observed it: the buffer so far is the
        initial yield (only the first such yield counts)."""
        if self._initial_yield is None:
            self._initial_yield = self.take()

    def take_initial_yield(self) -> list[OutputItem] | None:
        """The initial yield, if there is one, and forget it."""
        items, self._initial_yield = self._initial_yield, None
        self.taken += len(items or ())
        return items

    def _take_initial_yield(self) -> list[OutputItem]:
        return self.take_initial_yield() or []

    def completed(self, completion: Completed) -> Completed:
        """``completion`` with the initial yield (forgotten now) before its output."""
        return Completed(
            self._take_initial_yield() + completion.content_items, completion.error_text
        )
