"""code_mode: let an LLM agent act by writing JavaScript that calls your Python tools.

A program runs as a *cell* in a fresh V8 isolate, by default inside a worker process
(``EngineConfig.isolation``: ``"process"``, or ``"thread"`` for isolates on threads of
this process); it calls the host's tools (``await tools.search({...})``), loops,
filters, calls in parallel and emits only the output the model needs. Cells are child
tasks of a session-level trio nursery.

The public API is what this module exports; everything under an underscore is internal.
"""

from ._config import RuntimeConfig
from ._delegate import ExecuteRequest, SessionRuntimeDelegate
from ._engine import Engine, EngineConfig
from ._errors import (
    AlreadyTerminating,
    BusyObserver,
    CodeModeError,
    DuplicateCell,
    MissingCell,
    RuntimeFailure,
    ShuttingDown,
)
from ._facade import Approval, CellFinished, CodeModeSession, Notification, Toolset
from ._session_runtime import PendingEvent, SessionRuntime, StartedCell, open_session_runtime
from ._types import (
    JSON,
    Audio,
    CellEvent,
    CellId,
    Completed,
    Image,
    ImageDetail,
    NestedToolCall,
    ObserveMode,
    OutputItem,
    Pending,
    PendingFrontier,
    StepToFrontier,
    Terminated,
    Text,
    ToolDefinition,
    ToolKind,
    ToolName,
    YieldAfter,
    Yielded,
)
from .integrations.python_tools import PythonTool, tool
from .integrations.routing import NestedTool
from .model_tools.formatting import is_error_result
from .model_tools.tool_search import ToolSearch

__version__ = "0.1.0"
"""This release (``pyproject.toml`` reads it from here)."""

__all__ = [
    "JSON",
    "AlreadyTerminating",
    "Approval",
    "Audio",
    "BusyObserver",
    "CellEvent",
    "CellFinished",
    "CellId",
    "CodeModeError",
    "CodeModeSession",
    "Completed",
    "DuplicateCell",
    "Engine",
    "EngineConfig",
    "ExecuteRequest",
    "Image",
    "ImageDetail",
    "MissingCell",
    "NestedTool",
    "NestedToolCall",
    "Notification",
    "ObserveMode",
    "OutputItem",
    "Pending",
    "PendingEvent",
    "PendingFrontier",
    "PythonTool",
    "RuntimeConfig",
    "RuntimeFailure",
    "SessionRuntime",
    "SessionRuntimeDelegate",
    "ShuttingDown",
    "StartedCell",
    "StepToFrontier",
    "Terminated",
    "Text",
    "ToolDefinition",
    "ToolKind",
    "ToolName",
    "ToolSearch",
    "Toolset",
    "YieldAfter",
    "Yielded",
    "is_error_result",
    "open_session_runtime",
    "tool",
]
