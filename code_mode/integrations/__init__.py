"""Ways to bring tools into code mode.

* :mod:`.python_tools` -- ``@tool``: a type-hinted Python function as a nested tool,
  with JSON Schemas generated from its hints and input validated before it runs.
"""

from .python_tools import (
    JSONValidationError,
    PythonTool,
    ToolArgumentsError,
    ToolResultError,
    input_schema_for,
    schema_for_type,
    to_json,
    tool,
    validate_json,
)

__all__ = [
    "JSONValidationError",
    "PythonTool",
    "ToolArgumentsError",
    "ToolResultError",
    "input_schema_for",
    "schema_for_type",
    "to_json",
    "tool",
    "validate_json",
]
