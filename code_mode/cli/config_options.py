"""The command line's options for every ``RuntimeConfig`` limit and each yield limit.

One option per field of :class:`~code_mode.RuntimeConfig` (``--memory-limit-bytes``,
``--max-cell-seconds``...), made from the fields themselves so that a new limit gets
its option and the help states its default; plus, for ``mcp serve``, the yield limits
of each session (``--max-yield-ms``, ``--wait-idle-floor-ms``). A bad value is a
usage error naming the option.
"""

from __future__ import annotations

import argparse
from typing import Any

import attrs

from .._config import RuntimeConfig

__all__ = ["add_runtime_options", "add_yield_options", "runtime_config"]


def _option(name: str) -> str:
    return "--" + name.replace("_", "-")


def _typed(field: attrs.Attribute[Any]) -> dict[str, Any]:
    kind = str(field.type)
    if field.name == "isolation":
        return {"choices": ["process", "thread"], "metavar": "{process,thread}"}
    if kind == "bool":
        return {"action": argparse.BooleanOptionalAction}
    if kind == "int":
        return {"type": int, "metavar": "N"}
    return {"type": float, "metavar": "SECONDS" if "seconds" in field.name else "X"}


def add_runtime_options(parser: argparse.ArgumentParser) -> None:
    """An option per :class:`RuntimeConfig` field (unset: the field's default)."""
    group = parser.add_argument_group("limits of each program (RuntimeConfig; docs/security.md)")
    for field in attrs.fields(RuntimeConfig):
        shown = _shown(field.name, field.default)
        group.add_argument(
            _option(field.name),
            dest=f"config_{field.name}",
            default=None,
            help=f"RuntimeConfig.{field.name} (default {shown})",
            **_typed(field),
        )


def _shown(name: str, default: object) -> str:
    """A default as the help states it: an integer in full, with its MiB beside a size
    in bytes of whole mebibytes (``268435456, 256 MiB``), never in exponent form (``%g``
    printed ``2.68435e+08``, which no one can type back); a float as short as it reads,
    in full when that would need an exponent."""
    if default is None:
        return "the engine's"
    if isinstance(default, bool):
        return str(default).lower()
    if isinstance(default, int):
        mebibytes, rest = divmod(default, 1 << 20)
        size = name.endswith("_bytes") and mebibytes > 0 and rest == 0
        return f"{default}, {mebibytes} MiB" if size else str(default)
    if isinstance(default, float):
        short = f"{default:g}"
        if "e" not in short:
            return short
        return str(int(default)) if default.is_integer() else repr(default)
    return str(default)


def runtime_config(args: argparse.Namespace) -> RuntimeConfig:
    """The :class:`RuntimeConfig` of the options given (others: defaults). Raises
    ``ValueError``/``TypeError`` naming the field of a bad value."""
    given = {
        field.name: getattr(args, f"config_{field.name}")
        for field in attrs.fields(RuntimeConfig)
        if getattr(args, f"config_{field.name}", None) is not None
    }
    return RuntimeConfig(**given)


def add_yield_options(parser: argparse.ArgumentParser, default_max_yield_ms: int) -> None:
    """``--max-yield-ms`` and ``--wait-idle-floor-ms`` (``mcp serve``)."""
    group = parser.add_argument_group("yield limits of each call (docs/mcp.md: client timeouts)")
    group.add_argument(
        "--max-yield-ms",
        type=_non_negative_int_or_none,
        default=default_max_yield_ms,
        metavar="MS",
        help="longest one exec/wait blocks before answering `Script running`; keep it "
        f"under your MCP client's timeout; `none` for no cap (default {default_max_yield_ms})",
    )
    group.add_argument(
        "--wait-idle-floor-ms",
        type=_non_negative_int_or_none,
        default=None,
        metavar="MS",
        help="a wait with nothing new holds on until output or this long (default: off)",
    )


def _non_negative_int_or_none(text: str) -> int | None:
    if text == "none":
        return None
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, or `none`, got {text}")
    return value
