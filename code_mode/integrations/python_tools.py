"""Python functions as nested tools: ``@tool`` turns a type-hinted function into a tool
a program calls as ``await tools.<name>({...})``.

::

    @tool
    async def search(
        query: Annotated[str, "What to look for."],
        limit: int = 10,
    ) -> list[str]:
        \"\"\"Search the documentation.\"\"\"
        ...

    search.definition   # ToolDefinition: kind FUNCTION, input and output JSON Schemas
    await search.call({"query": "trio", "limit": 3})   # validated, converted, run

What the decorator does:

* **Input schema** from the parameters' type hints: one object property per parameter;
  parameters with a default are optional (and the default is shown when it is JSON);
  ``Annotated[T, "text"]`` (or metadata with a ``description`` or ``documentation``
  attribute) describes a parameter; the docstring describes the tool. Supported hints:
  ``str``, ``int``, ``float``, ``bool``, ``None``, ``Any``/``object`` (anything),
  ``list[T]``/``Sequence[T]``, ``tuple[T, ...]``/``tuple[A, B]``,
  ``dict[str, T]``/``Mapping[str, T]``, ``Literal[...]``, ``enum.Enum`` subclasses,
  ``Optional``/``X | Y`` unions, ``TypedDict`` (``Required``/``NotRequired`` honoured),
  ``attrs`` classes, dataclasses and pydantic models (fields with defaults optional;
  a model's fields by their aliases, ``Field(description=...)`` honoured), ``NewType``
  and ``Annotated`` around any of these. Bounds, lengths and patterns in ``Annotated``
  metadata (annotated-types' ``Gt``/``Ge``/``Lt``/``Le``/``MinLen``/``MaxLen``,
  pydantic's ``Field(...)``) become schema keywords. Anything else is a ``TypeError``
  at decoration time, naming the parameter. pydantic is optional (see ``_pydantic``).
* **Output schema** from the return hint when it is one of the above (attrs/dataclass
  fields are then all required: the returned object always has them). A missing,
  ``Any`` or unsupported return hint gives no output schema (the model sees
  ``unknown``); the value is still converted and checked at run time.
* **Validation**: the input is checked against the generated schema before the
  function runs, by :func:`validate_json` (a small validator for the JSON Schema
  subset the generator emits, so no dependency). A bad input raises
  :class:`ToolArgumentsError`, whose message becomes the program's rejection, e.g.
  ``invalid arguments for tool `search`: field `limit`: expected integer, got string``.
  Valid input is then decoded into the hinted types (JSON objects into attrs classes,
  dataclasses and enums; lists into tuples; integers into floats where a float is
  expected; integral numbers such as ``3.0`` into ``int``). A pydantic model is built
  by its own validation; what its validators refuse is a :class:`ToolArgumentsError`
  too, naming the field.
* **Return value**: converted to JSON data by :func:`to_json` (attrs instances and
  dataclasses -> objects, pydantic models -> their dump by alias, tuples -> arrays,
  enums -> their values); anything else that
  is not JSON raises :class:`ToolResultError` naming where it is.
* **Sync functions** run in a worker thread (``trio.to_thread.run_sync``), never on
  the trio thread. The thread is not abandoned when the call is cancelled: a running
  sync tool finishes first (the session's ``async with`` waits for it), so write long
  sync tools to return promptly or make them async.
* **Idempotence**: ``@tool(idempotent=False)`` for a tool whose effect must not
  happen twice (``ToolDefinition.idempotent``): a call in flight when the stateless MCP
  server running its cell dies then fails the resumed cell instead of running again.
* **Namespaces**: ``@tool(namespace="github")`` gives ``ToolName("search", "github")``
  and the flattened raw name ``github__search``, i.e. ``tools.github__search`` in a
  program (namespaced tools are flat on ``tools``, like ``mcp__server__tool``).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, Final, Generic, ParamSpec, TypeVar, overload

import attrs
import trio

from .._types import JSON, ToolDefinition, ToolKind, ToolName
from ._json_schema import JSONValidationError, validate_json
from ._schema import ToolArgumentsError, schema_for_type
from ._signature import Signature, input_schema_for, signature_of
from ._to_json import ToolResultError, to_json
from .host_loop import on_host

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

NAMESPACE_SEPARATOR: Final = "__"
"""Joins a namespace and a tool name into the raw name: ``github`` + ``search`` ->
``github__search``."""


# --- the tool -------------------------------------------------------------------------


def _is_async(function: Callable[..., Any]) -> bool:
    target: Any = function
    while isinstance(target, functools.partial):
        target = target.func
    target = inspect.unwrap(target)
    if inspect.iscoroutinefunction(target):
        return True
    # An instance whose class defines `async def __call__`.
    if inspect.isfunction(target) or inspect.ismethod(target) or isinstance(target, type):
        return False
    return inspect.iscoroutinefunction(type(target).__call__)


_P = ParamSpec("_P")
_R = TypeVar("_R")


@attrs.frozen(eq=False)
class PythonTool(Generic[_P, _R]):
    """A Python function exposed as a nested tool; made by :func:`tool`.

    ``definition`` is what a session passes to programs (and to the ``exec``
    description); :meth:`call` runs one call from a program. Calling the object itself
    calls the wrapped function unchanged, so decorated functions stay usable and
    testable from Python. The class is generic in the function's parameters and return
    type, so a type checker sees the decorated function's own signature: awaiting a
    decorated ``async def add(a: int, b: int) -> int`` gives an ``int``.
    """

    function: Callable[_P, _R]
    definition: ToolDefinition
    is_async: bool
    _signature: Signature = attrs.field(alias="signature", repr=False)
    requires_approval: bool = attrs.field(default=False, kw_only=True)
    """Whether a session holds each call until the host approves it
    (``CodeModeSession.approve``/``deny``)."""

    @property
    def tool_name(self) -> ToolName:
        """The host's name of the tool (``name``, ``namespace``)."""
        return self.definition.tool_name

    def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        return self.function(*args, **kwargs)

    def parse_arguments(self, input: JSON) -> tuple[list[Any], dict[str, Any]]:
        """Validate a call's JSON input and decode it into the function's positional
        and keyword arguments. Missing input (``None``) is ``{}``. Raises
        :class:`ToolArgumentsError`."""
        if input is None:
            input = {}
        try:
            validate_json(input, self._signature.node.schema)
            decoded: dict[str, Any] = self._signature.node.decode(input, "")
        except JSONValidationError as error:
            raise ToolArgumentsError(self.definition.name, error) from None
        args = [decoded.pop(name) for name in self._signature.positional if name in decoded]
        return args, decoded

    async def call(self, input: JSON) -> JSON:
        """Run the tool for one call: validate and decode ``input``, run the function
        (a sync one in a worker thread), convert the return value to JSON data.

        Raises :class:`ToolArgumentsError` for bad input (the function does not run),
        :class:`ToolResultError` for a return value that is not JSON, and whatever the
        function raises. In a session each becomes the program's rejection message.
        """
        args, kwargs = self.parse_arguments(input)
        # The arguments come from JSON, checked at run time, not by the type checker.
        function: Callable[..., Any] = self.function
        if self.is_async:
            # Under asyncio (trio as its guest) on the asyncio loop, as it was written.
            result = await on_host(function(*args, **kwargs))
        else:
            result = await trio.to_thread.run_sync(functools.partial(function, *args, **kwargs))
        try:
            return to_json(result)
        except ToolResultError as error:
            raise ToolResultError(
                f"tool `{self.definition.name}` returned a value that cannot be converted "
                f"to JSON: {error}"
            ) from None


@overload
def tool(
    function: Callable[_P, _R],
    /,
    *,
    name: str | None = None,
    namespace: str | None = None,
    description: str | None = None,
    requires_approval: bool = False,
    idempotent: bool = True,
) -> PythonTool[_P, _R]: ...


@overload
def tool(
    *,
    name: str | None = None,
    namespace: str | None = None,
    description: str | None = None,
    requires_approval: bool = False,
    idempotent: bool = True,
) -> Callable[[Callable[_P, _R]], PythonTool[_P, _R]]: ...


def tool(
    function: Callable[_P, _R] | None = None,
    /,
    *,
    name: str | None = None,
    namespace: str | None = None,
    description: str | None = None,
    requires_approval: bool = False,
    idempotent: bool = True,
) -> PythonTool[_P, _R] | Callable[[Callable[_P, _R]], PythonTool[_P, _R]]:
    """Make a nested tool from a type-hinted function: ``@tool``, ``@tool(name=...,
    namespace=..., description=...)`` or ``tool(function, ...)``.

    ``name`` defaults to the function's ``__name__``, ``description`` to its docstring
    (cleaned; empty if none). With a ``namespace`` the raw name is
    ``<namespace>__<name>``, the JS identifier derived from it. Raises ``TypeError``
    for a parameter whose hint is missing or unsupported, or for ``*args``/``**kwargs``.
    See the module docstring for the supported hints. The result keeps ``function``'s
    signature for type checkers (see :class:`PythonTool`). ``requires_approval``: a
    session holds each call until the host approves it (``CodeModeSession.approve``).
    ``idempotent=False`` says a call must not run twice; it matters only for a call in
    flight when the stateless MCP server running its cell dies: another server resumes
    the cell and runs such a call again once, unless the tool says ``False``, when the
    cell fails with a clear message instead (default ``True``).
    """

    def make(function: Callable[_P, _R]) -> PythonTool[_P, _R]:
        tool_name = name if name is not None else getattr(function, "__name__", None)
        if not isinstance(tool_name, str) or not tool_name:
            raise TypeError("a tool needs a non-empty name (pass name=...)")
        if namespace is not None and not namespace:
            raise TypeError("a tool namespace must be a non-empty string or None")
        text = description if description is not None else inspect.getdoc(function) or ""
        raw_name = (
            tool_name if namespace is None else f"{namespace}{NAMESPACE_SEPARATOR}{tool_name}"
        )
        signature = signature_of(function, tool_name)
        definition = ToolDefinition(
            name=raw_name,
            tool_name=ToolName(tool_name, namespace),
            description=text.strip(),
            kind=ToolKind.FUNCTION,
            input_schema=signature.node.schema,
            output_schema=signature.output_schema,
            idempotent=idempotent,
        )
        return PythonTool(
            function=function,
            definition=definition,
            is_async=_is_async(function),
            signature=signature,
            requires_approval=requires_approval,
        )

    if function is not None:
        return make(function)
    return make
