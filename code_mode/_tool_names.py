"""How a tool's raw name becomes its JavaScript identifier on ``tools``."""

from __future__ import annotations


def _allowed(char: str, first: bool) -> bool:
    if char in "_$" or ("a" <= char <= "z") or ("A" <= char <= "Z"):
        return True
    return not first and "0" <= char <= "9"


def normalize_identifier(name: str) -> str:
    """The identifier of tool ``name`` inside a program.

    Each character that is not ``_``, ``$``, an ASCII letter or (not first) an ASCII
    digit becomes ``_``; an empty name becomes ``_``. No keyword escaping:
    ``tools.delete`` is a valid property access. Examples: ``hidden-dynamic-tool`` ->
    ``hidden_dynamic_tool``, ``1abc`` -> ``_abc``, ``mcp__server__tool`` unchanged.
    """
    if not name:
        return "_"
    return "".join(char if _allowed(char, index == 0) else "_" for index, char in enumerate(name))
