"""The files a ``bench.run`` run leaves: ``results.json`` (every figure), ``results.md``
(the run's description and tables) and, with matplotlib, one PNG per benchmark."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

from .tables import describe_run, format_table

#: Where results go by default (git-ignored).
DEFAULT_OUT = Path(__file__).resolve().parent / "results"


def json_safe(value: Any) -> Any:
    """``value`` with NaN and infinities as ``null`` (JSON has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item) for item in value]
    return value


def write_results(
    results: dict[str, Any],
    out: Path,
    *,
    plots: bool = True,
    copy_plots_to: Path | None = None,
) -> list[Path]:
    """Write ``results.json``, ``results.md`` and (unless ``plots`` is false) the PNGs
    into ``out``; returns the files written."""
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "results.json", out / "results.md"]
    written[0].write_text(json.dumps(json_safe(results), indent=2) + "\n", encoding="utf-8")
    written[1].write_text(
        describe_run(results) + "\n\n" + format_table(results, markdown=True) + "\n",
        encoding="utf-8",
    )
    if plots:
        from bench.plots import write_plots  # matplotlib is only needed here

        images = write_plots(results, out)
        written += images
        if copy_plots_to is not None:
            copy_plots_to.mkdir(parents=True, exist_ok=True)
            for image in images:
                shutil.copy2(image, copy_plots_to / image.name)
    return written
