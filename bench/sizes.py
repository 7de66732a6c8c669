"""How many cells, calls and rounds each benchmark runs: the full sizes and ``--quick``."""

from __future__ import annotations

import attrs


@attrs.frozen(kw_only=True)
class Sizes:
    """Repetition counts. ``rounds`` alternates ours/baseline blocks."""

    rounds: int
    b1_cells: int  # per round and side, cells started b1_gap seconds apart
    b1_gap: float
    b1_burst_cells: int  # per round and side, cells back to back (info only)
    b2_calls: int
    b2_reps: int  # per round and side
    b3_calls: int
    b3_reps: int
    b4_reps: int  # per round and side
    b5_reps: int  # per mode
    b6_counts: tuple[int, ...]
    b6_calls: int
    b6_timeout: float


FULL = Sizes(
    rounds=5,
    b1_cells=40,
    b1_gap=0.025,
    b1_burst_cells=60,
    b2_calls=2000,
    b2_reps=3,
    b3_calls=1000,
    b3_reps=3,
    b4_reps=60,
    b5_reps=100,
    b6_counts=(1, 10, 100, 500),
    b6_calls=20,
    b6_timeout=240.0,
)

QUICK = Sizes(
    rounds=1,
    b1_cells=3,
    b1_gap=0.01,
    b1_burst_cells=2,
    b2_calls=20,
    b2_reps=2,
    b3_calls=20,
    b3_reps=2,
    b4_reps=3,
    b5_reps=2,
    b6_counts=(1, 3),
    b6_calls=3,
    b6_timeout=60.0,
)
