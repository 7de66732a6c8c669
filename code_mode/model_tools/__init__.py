"""The model-facing layer's pure parts: what the ``exec`` and ``wait`` tools look like
to a model, how their input is parsed and how their results are formatted.

Nothing here touches a session: these are functions from plain data to plain data, so
a host can use them with any runtime wiring and test them without V8.

* :mod:`.typescript` -- JSON Schema -> TypeScript declarations, MCP result detection,
  JavaScript identifiers of tools;
* :mod:`.pragma` -- the ``// @exec: {...}`` first line of an ``exec`` input;
* :mod:`.formatting` -- cell events -> result content items (``is_error_result`` is
  exported by :mod:`code_mode`);
* :mod:`.truncation` -- cutting output to its token budget (:mod:`.audio_tokens`: audio's cost);
* :mod:`.descriptions` -- the generated ``exec``/``wait`` descriptions;
* :mod:`.adapters` -- tool definitions and results in OpenAI, Anthropic and MCP shapes.
"""

from .._tool_names import normalize_identifier
from .adapters import (
    EXEC_TOOL_NAME,
    WAIT_TOOL_NAME,
    ExecArgumentsError,
    anthropic_content,
    anthropic_exec_tool,
    anthropic_tool_result,
    anthropic_wait_tool,
    audio_note,
    exec_source_from_arguments,
    exec_source_from_call,
    mcp_call_tool_result,
    mcp_content,
    mcp_exec_tool,
    mcp_wait_tool,
    openai_content,
    openai_exec_output,
    openai_exec_tool,
    openai_wait_output,
    openai_wait_tool,
    wait_parameters,
)
from .descriptions import (
    NamespaceDescription,
    augment_tool_definition,
    exec_description,
    tool_sample,
    wait_description,
)
from .formatting import (
    IMAGE_TOKEN_COST,
    PUSH_RUNNING_NOTE,
    estimate_tokens,
    format_result,
    push_preamble,
    result_status,
    result_succeeded,
    truncate_output,
)
from .mcp_results import MCP_TYPES_PREAMBLE, is_mcp_call_tool_result
from .pragma import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    DEFAULT_YIELD_TIME_MS,
    ExecInput,
    ExecInputError,
    PragmaError,
    parse_exec_input,
)
from .typescript import render_schema, tool_declaration

__all__ = [
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "DEFAULT_YIELD_TIME_MS",
    "EXEC_TOOL_NAME",
    "IMAGE_TOKEN_COST",
    "MCP_TYPES_PREAMBLE",
    "PUSH_RUNNING_NOTE",
    "WAIT_TOOL_NAME",
    "ExecArgumentsError",
    "ExecInput",
    "ExecInputError",
    "NamespaceDescription",
    "PragmaError",
    "anthropic_content",
    "anthropic_exec_tool",
    "anthropic_tool_result",
    "anthropic_wait_tool",
    "audio_note",
    "augment_tool_definition",
    "estimate_tokens",
    "exec_description",
    "exec_source_from_arguments",
    "exec_source_from_call",
    "format_result",
    "is_mcp_call_tool_result",
    "mcp_call_tool_result",
    "mcp_content",
    "mcp_exec_tool",
    "mcp_wait_tool",
    "normalize_identifier",
    "openai_content",
    "openai_exec_output",
    "openai_exec_tool",
    "openai_wait_output",
    "openai_wait_tool",
    "parse_exec_input",
    "push_preamble",
    "render_schema",
    "result_status",
    "result_succeeded",
    "tool_declaration",
    "tool_sample",
    "truncate_output",
    "wait_description",
    "wait_parameters",
]
