"""``@tool``: schemas from type hints, input validation, return conversion, threads."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import math
import threading
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, NewType, NotRequired, Optional, TypedDict, Union

import attrs
import pytest
import trio

from code_mode import CodeModeSession, PythonTool, Text, ToolKind, ToolName, tool
from code_mode.integrations import (
    JSONValidationError,
    ToolArgumentsError,
    ToolResultError,
    input_schema_for,
    schema_for_type,
    to_json,
    validate_json,
)
from code_mode.model_tools import tool_declaration

SAFETY = 10.0  # seconds; a hang guard, never the thing under test


# --- types used in the hints -----------------------------------------------------------


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Movie(TypedDict):
    """A film."""

    title: str
    year: NotRequired[Annotated[int, "Release year."]]


@attrs.frozen
class Point:
    x: float
    y: float = 0.0
    label: str = attrs.field(default="", metadata={"description": "What the point is."})
    tags: list[str] = attrs.field(factory=list)


@dataclasses.dataclass
class Box:
    width: int
    height: int = 1


UserId = NewType("UserId", str)


def closed(properties: dict[str, Any], *required: str) -> dict[str, Any]:
    """The schema of an object of these ``properties`` and no other."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


OBJECT = {"type": "object"}
NULL = {"type": "null"}

POINT_INPUT = closed(
    {
        "x": {"type": "number"},
        "y": {"type": "number", "default": 0.0},
        "label": {"type": "string", "description": "What the point is.", "default": ""},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "x",
)
MOVIE = closed(
    {
        "title": {"type": "string"},
        "year": {"type": "integer", "description": "Release year."},
    },
    "title",
)

SCHEMAS: list[tuple[Any, dict[str, Any]]] = [
    (str, {"type": "string"}),
    (int, {"type": "integer"}),
    (float, {"type": "number"}),
    (bool, {"type": "boolean"}),
    (None, NULL),
    (type(None), NULL),
    (Any, {}),
    (object, {}),
    (list[int], {"type": "array", "items": {"type": "integer"}}),
    (list, {"type": "array"}),
    (Sequence[str], {"type": "array", "items": {"type": "string"}}),
    (list[list[bool]], {"type": "array", "items": {"type": "array", "items": {"type": "boolean"}}}),
    (tuple[int, ...], {"type": "array", "items": {"type": "integer"}}),
    (
        tuple[int, str],
        {
            "type": "array",
            "prefixItems": [{"type": "integer"}, {"type": "string"}],
            "minItems": 2,
            "maxItems": 2,
        },
    ),
    (dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
    (Mapping[str, Any], {"type": "object", "additionalProperties": {}}),
    (dict, OBJECT),
    (Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}),
    (Literal["only"], {"type": "string", "const": "only"}),
    (Literal[1, "x"], {"enum": [1, "x"]}),
    (Color, {"type": "string", "enum": ["red", "blue"]}),
    (Optional[int], {"anyOf": [{"type": "integer"}, NULL]}),  # noqa: UP045 - the point
    (int | None, {"anyOf": [{"type": "integer"}, NULL]}),
    (Union[int, str], {"anyOf": [{"type": "integer"}, {"type": "string"}]}),  # noqa: UP007
    (Movie, MOVIE),
    (Point, POINT_INPUT),
    (
        Box,
        closed(
            {
                "width": {"type": "integer"},
                "height": {"type": "integer", "default": 1},
            },
            "width",
        ),
    ),
    (UserId, {"type": "string"}),
    (Annotated[str, "A city name."], {"type": "string", "description": "A city name."}),
    (
        list[Annotated[int, "An id."]],
        {"type": "array", "items": {"type": "integer", "description": "An id."}},
    ),
]


@pytest.mark.parametrize(("hint", "schema"), SCHEMAS, ids=[repr(hint) for hint, _ in SCHEMAS])
def test_schema_for_each_supported_hint(hint: Any, schema: dict[str, Any]) -> None:
    assert schema_for_type(hint) == schema


def test_output_schema_makes_every_field_required() -> None:
    # A returned attrs instance always has every field, so none is optional.
    schema = schema_for_type(Point, output=True)
    assert schema["required"] == ["x", "y", "label", "tags"]
    assert "default" not in schema["properties"]["y"]


@pytest.mark.parametrize(
    ("hint", "message"),
    [
        (set[int], "unsupported type hint"),
        (dict[int, str], "dict keys must be `str`"),
        (datetime.datetime, "unsupported type datetime"),
        (Literal[1.5], "unsupported Literal value 1.5"),
    ],
)
def test_unsupported_hints_are_refused(hint: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        schema_for_type(hint)


# --- the decorator ----------------------------------------------------------------------


@tool
async def search(
    query: Annotated[str, "What to look for."],
    limit: int = 10,
    mode: Literal["fast", "exact"] = "fast",
    movie: Movie | None = None,
) -> list[str]:
    """Search the catalogue.

    Returns matching titles."""
    return [f"{query}:{limit}:{mode}:{movie['title'] if movie else '-'}"]


def test_definition_from_signature_and_docstring() -> None:
    definition = search.definition
    assert isinstance(search, PythonTool)
    assert definition.name == "search"
    assert definition.tool_name == ToolName("search")
    assert definition.kind is ToolKind.FUNCTION
    assert definition.description == "Search the catalogue.\n\nReturns matching titles."
    assert definition.input_schema == closed(
        {
            "query": {"type": "string", "description": "What to look for."},
            "limit": {"type": "integer", "default": 10},
            "mode": {"type": "string", "enum": ["fast", "exact"], "default": "fast"},
            "movie": {"anyOf": [MOVIE, NULL], "default": None},
        },
        "query",
    )
    assert definition.output_schema == {"type": "array", "items": {"type": "string"}}


def test_declaration_shown_to_the_model() -> None:
    declaration = tool_declaration(search.definition)
    assert "// What to look for.\n  query: string;" in declaration
    assert 'mode?: "fast" | "exact";' in declaration
    assert declaration.endswith("}): Promise<Array<string>>; };")


def test_decorator_options_and_namespace() -> None:
    @tool(name="find", namespace="docs", description="Find a page.")
    async def anything(q: str) -> None:
        return None

    assert anything.definition.name == "docs__find"
    assert anything.definition.tool_name == ToolName("find", "docs")
    assert anything.definition.description == "Find a page."
    assert anything.definition.output_schema == NULL
    assert tool_declaration(anything.definition) == (
        "declare const tools: { docs__find(args: { q: string; }): Promise<null>; };"
    )


def test_idempotent_defaults_to_true_and_is_carried_by_the_definition() -> None:
    """A tool is idempotent unless it says not (a call in flight when its cell's
    server dies then fails the resumed cell instead of running again); every form of
    the decorator passes the flag into the definition."""

    async def charge(amount: int) -> None:
        return None

    assert search.definition.idempotent is True
    assert tool(charge).definition.idempotent is True
    assert tool(charge, idempotent=False).definition.idempotent is False
    assert tool(idempotent=False)(charge).definition.idempotent is False
    assert tool(idempotent=True, namespace="pay")(charge).definition.idempotent is True


def test_no_parameters_no_docstring_no_return_hint() -> None:
    def ping():  # type: ignore[no-untyped-def]
        return "pong"

    pinged = tool(ping)
    assert pinged.definition.input_schema == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }
    assert pinged.definition.output_schema is None
    assert pinged.definition.description == ""


def test_decorated_function_is_still_callable() -> None:
    @tool
    def double(x: int) -> int:
        return 2 * x

    assert double(21) == 42


@pytest.mark.parametrize(
    ("function_source", "message"),
    [
        ("def f(x): ...", "parameter `x` needs a type hint"),
        ("def f(*args: int): ...", "*args and **kwargs are not supported"),
        ("def f(**kwargs: int): ...", "*args and **kwargs are not supported"),
        ("def f(x: set[int]): ...", "parameter `x`: unsupported type hint"),
    ],
)
def test_bad_signatures_fail_at_decoration(function_source: str, message: str) -> None:
    namespace: dict[str, Any] = {}
    exec(function_source, namespace)
    with pytest.raises(TypeError, match=message.replace("*", r"\*")):
        tool(namespace["f"])


def test_input_schema_for_matches_definition() -> None:
    assert input_schema_for(search.function) == search.definition.input_schema


# --- validation -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            {"query": "x", "limit": "3"},
            "invalid arguments for tool `search`: field `limit`: expected integer, got string",
        ),
        ({}, "invalid arguments for tool `search`: field `query`: missing required field"),
        (
            {"query": "x", "mode": "slow"},
            'invalid arguments for tool `search`: field `mode`: expected one of "fast", '
            '"exact", got "slow"',
        ),
        (
            {"query": "x", "movie": {"title": "Heat", "year": "1995"}},
            "invalid arguments for tool `search`: field `movie.year`: expected integer, got string",
        ),
        (
            {"query": "x", "movie": {}},
            "invalid arguments for tool `search`: field `movie.title`: missing required field",
        ),
        (
            {"query": "x", "movie": 3},
            "invalid arguments for tool `search`: field `movie`: expected object or null, "
            "got integer",
        ),
        (
            {"query": "x", "pages": 2},
            "invalid arguments for tool `search`: field `pages`: unexpected field "
            "(allowed fields: limit, mode, movie, query)",
        ),
        (["x"], "invalid arguments for tool `search`: expected object, got array"),
        (
            {"query": True},
            "invalid arguments for tool `search`: field `query`: expected string, got boolean",
        ),
    ],
)
async def test_bad_input_is_rejected_naming_the_field(arguments: Any, message: str) -> None:
    with pytest.raises(ToolArgumentsError) as caught:
        await search.call(arguments)
    assert str(caught.value) == message


async def test_function_does_not_run_on_bad_input() -> None:
    calls: list[int] = []

    @tool
    async def record(n: int) -> None:
        calls.append(n)

    with pytest.raises(ToolArgumentsError):
        await record.call({"n": "one"})
    await record.call({"n": 1})
    assert calls == [1]


@pytest.mark.parametrize(
    ("value", "schema", "message"),
    [
        ([1, "a"], {"type": "array", "items": {"type": "integer"}}, "field `[1]`: expected"),
        ({"a-b": 1}, {"additionalProperties": {"type": "string"}}, 'field `["a-b"]`: expected'),
        ({"a": [{"b": 1}]}, schema_for_type(dict[str, list[dict[str, str]]]), "`a[0].b`"),
        (5, {"type": "integer", "maximum": 3}, "expected a number <= 3, got 5"),
        ("", {"type": "string", "minLength": 1}, "expected at least 1 characters"),
        ("x", {"type": "string", "pattern": "^[0-9]+$"}, "expected a string matching"),
        (1, {"const": True}, "expected true, got 1"),
        (1, False, "no value is allowed here"),
        ([1, 2, 3], schema_for_type(tuple[int, int]), "expected at most 2 items, got 3"),
    ],
)
def test_validator_messages(value: Any, schema: Any, message: str) -> None:
    with pytest.raises(JSONValidationError) as caught:
        validate_json(value, schema)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("value", "schema"),
    [
        (3.0, {"type": "integer"}),  # JavaScript has one number type
        (3, {"type": "number"}),
        ({"anything": [1]}, {}),
        ("x", True),
        (None, schema_for_type(int | None)),
        ([1, "a"], schema_for_type(tuple[int, str])),
        (1.0, {"enum": [1]}),
    ],
)
def test_validator_accepts(value: Any, schema: Any) -> None:
    validate_json(value, schema)


# --- decoding into the hinted types -----------------------------------------------------


@tool
async def typed(
    point: Point,
    box: Box,
    color: Color,
    pair: tuple[int, str],
    ratio: float,
    count: int,
    maybe: Point | None = None,
) -> dict[str, str]:
    return {
        "point": repr(point),
        "box": repr(box),
        "color": repr(color),
        "pair": repr(pair),
        "ratio": repr(ratio),
        "count": repr(count),
        "maybe": repr(maybe),
    }


async def test_input_is_decoded_into_hinted_types() -> None:
    result = await typed.call(
        {
            "point": {"x": 1, "tags": ["a"]},
            "box": {"width": 2},
            "color": "blue",
            "pair": [1, "a"],
            "ratio": 2,
            "count": 3.0,
            "maybe": {"x": 0.5},
        }
    )
    assert result == {
        "point": repr(Point(x=1.0, tags=["a"])),
        "box": repr(Box(width=2)),
        "color": repr(Color.BLUE),
        "pair": repr((1, "a")),
        "ratio": "2.0",
        "count": "3",
        "maybe": repr(Point(x=0.5)),
    }


async def test_missing_input_counts_as_empty_object() -> None:
    @tool
    async def defaults(n: int = 7) -> int:
        return n

    assert await defaults.call(None) == 7


async def test_positional_only_parameters() -> None:
    @tool
    async def sub(a: int, b: int, /) -> int:
        return a - b

    assert await sub.call({"b": 1, "a": 5}) == 4


# --- return values ----------------------------------------------------------------------


@attrs.define
class Private:
    _secret: int
    derived: str = attrs.field(init=False, default="d")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (Point(1, 2), {"x": 1, "y": 2, "label": "", "tags": []}),
        (Box(3), {"width": 3, "height": 1}),
        ((1, (2, 3)), [1, [2, 3]]),
        ({"c": Color.RED, 5: None}, {"c": "red", "5": None}),
        ([Private(1)], [{"secret": 1, "derived": "d"}]),
        (None, None),
        ("s", "s"),
        (1.5, 1.5),
    ],
)
def test_return_values_convert_to_json(value: Any, expected: Any) -> None:
    assert to_json(value) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"when": [datetime.date(2024, 1, 1)]}, "at `when[0]`: unsupported type datetime.date"),
        ({1.5: "x"}, "object key 1.5 is not a string"),
        ([math.nan], "at `[0]`: nan is not a JSON number"),
        ({1, 2}, "unsupported type set"),
    ],
)
def test_non_json_return_values_are_rejected(value: Any, message: str) -> None:
    with pytest.raises(ToolResultError, match=message.replace("[", r"\[").replace("]", r"\]")):
        to_json(value)


def test_reference_cycles_are_rejected() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ToolResultError, match="reference cycle"):
        to_json(loop)


async def test_tool_reports_which_tool_returned_non_json() -> None:
    @tool
    async def now() -> Any:
        return {"at": datetime.datetime(2024, 1, 1)}

    with pytest.raises(ToolResultError) as caught:
        await now.call({})
    assert str(caught.value) == (
        "tool `now` returned a value that cannot be converted to JSON: at `at`: "
        "unsupported type datetime.datetime"
    )


# --- sync functions run in a worker thread ----------------------------------------------


async def test_sync_function_runs_off_the_trio_thread() -> None:
    seen: list[threading.Thread] = []

    @tool
    def where() -> str:
        seen.append(threading.current_thread())
        return "ok"

    assert not where.is_async
    assert await where.call({}) == "ok"
    assert seen[0] is not threading.current_thread()


async def test_async_function_runs_on_the_trio_thread() -> None:
    seen: list[threading.Thread] = []

    @tool
    async def where() -> str:
        seen.append(threading.current_thread())
        return "ok"

    assert where.is_async
    await where.call({})
    assert seen == [threading.current_thread()]


async def test_sync_tool_called_from_a_program_runs_in_a_thread() -> None:
    trio_thread = threading.current_thread()
    seen: list[threading.Thread] = []

    def blocking_lookup(key: str) -> str:
        """A blocking call, as a sync tool."""
        seen.append(threading.current_thread())
        return key.upper()

    with trio.fail_after(SAFETY):
        async with CodeModeSession(tools=[blocking_lookup]) as cm:
            items = await cm.exec('text(await tools.blocking_lookup({ key: "abc" }))')
    assert items[1:] == [Text("ABC")]
    assert len(seen) == 1 and seen[0] is not trio_thread


# --- namespaces and errors inside a program --------------------------------------------


async def test_namespaced_tools_and_validation_errors_in_a_program() -> None:
    @tool(namespace="math")
    async def add(a: int, b: int) -> int:
        return a + b

    @tool(namespace="text")
    async def add_suffix(value: str, suffix: str = "!") -> str:
        return value + suffix

    source = """
    text(await tools.math__add({ a: 2, b: 40 }));
    text(await tools.text__add_suffix({ value: "hi" }));
    try { await tools.math__add({ a: "2", b: 40 }); } catch (e) { text(e); }
    """
    with trio.fail_after(SAFETY):
        async with CodeModeSession(tools=[add, add_suffix]) as cm:
            items = await cm.exec(source)
    assert items[1:] == [
        Text("42"),
        Text("hi!"),
        Text("invalid arguments for tool `math__add`: field `a`: expected integer, got string"),
    ]
