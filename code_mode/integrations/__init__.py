"""Ways to bring tools into code mode.

* :mod:`.python_tools` -- ``@tool``: a type-hinted Python function as a nested tool,
  with JSON Schemas generated from its hints and input validated before it runs
  (``tool`` and ``PythonTool`` are exported by :mod:`code_mode`; the schema helpers
  and errors here);
* :mod:`.mcp` -- the tools of MCP servers.
"""

from .python_tools import (
    JSONValidationError,
    ToolArgumentsError,
    ToolResultError,
    input_schema_for,
    schema_for_type,
    to_json,
    validate_json,
)

__all__ = [
    "JSONValidationError",
    "ToolArgumentsError",
    "ToolResultError",
    "input_schema_for",
    "schema_for_type",
    "to_json",
    "validate_json",
]
