"""What both sides of a benchmark share: the record of a tool-call run and the error
for an unexpected outcome.

Kept apart from ``bench/ours.py`` so that the baseline (``bench/raw.py``) does not
import code_mode in its child process.
"""

from __future__ import annotations

import attrs


class BenchError(Exception):
    """A benchmark saw an outcome other than the one it measures."""


def expect(event: object, expected: object) -> None:
    """Raise :class:`BenchError` unless ``event == expected``."""
    if event != expected:
        raise BenchError(f"expected {expected!r}, got {event!r}")


@attrs.frozen
class CallRun:
    """Per-call costs of repeated tool-call loops (B2 / B3, either side).

    ``per_call``: one sample per repetition, (end of the program - first call reaching
    the host) / calls. ``gaps``: time between consecutive calls reaching the host, all
    repetitions pooled (sequential loops only). ``cpu_per_call``: CPU time of the
    whole process tree over the measured repetitions, per call (one value).
    ``waits_per_call``: voluntary context switches of the process tree's threads per
    call, one sample per repetition (how many thread wake-ups a call costs)."""

    per_call: list[float]
    gaps: list[float]
    cpu_per_call: list[float] = attrs.Factory(list)
    waits_per_call: list[float] = attrs.Factory(list)
