"""pydantic models as ``@tool`` parameters and results: schemas, validation messages and
decoding as good as for attrs classes (pydantic is a test-only dependency)."""

from __future__ import annotations

import subprocess
import sys
from typing import Annotated, Any

import pytest
import trio

from code_mode import CodeModeSession, Text, tool
from code_mode.integrations.python_tools import ToolArgumentsError, schema_for_type, to_json

pydantic = pytest.importorskip("pydantic")
BaseModel, Field, field_validator = pydantic.BaseModel, pydantic.Field, pydantic.field_validator

SAFETY = 30


class Address(BaseModel):
    city: str = Field(description="City name.")
    zip_code: str | None = Field(default=None, alias="zipCode", pattern=r"^\d{5}$")


class Person(BaseModel):
    """Someone to greet."""

    name: Annotated[str, Field(min_length=1, description="Full name.")]
    age: int = Field(ge=0, le=150)
    address: Address
    nicknames: list[str] = Field(default_factory=list)
    shout: bool = False

    @field_validator("name")
    @classmethod
    def no_digits(cls, value: str) -> str:
        if any(ch.isdigit() for ch in value):
            raise ValueError("a name has no digits")
        return value


ADDRESS_INPUT = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "City name."},
        "zipCode": {
            "anyOf": [{"type": "string", "pattern": r"^\d{5}$"}, {"type": "null"}],
            "default": None,
        },
    },
    "required": ["city"],
    "additionalProperties": False,
}
PERSON_INPUT = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "description": "Full name."},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "address": ADDRESS_INPUT,
        "nicknames": {"type": "array", "items": {"type": "string"}},
        "shout": {"type": "boolean", "default": False},
    },
    "required": ["name", "age", "address"],
    "additionalProperties": False,
}


class Greeting(BaseModel):
    text: str
    for_: str = Field(alias="for")


@tool
async def greet(person: Person, times: int = 1) -> Greeting:
    """Greet someone."""
    text = f"Hello, {person.name} of {person.address.city}!" * times
    return Greeting(text=text.upper() if person.shout else text, **{"for": person.name})


def test_model_input_schema() -> None:
    assert schema_for_type(Person) == PERSON_INPUT
    assert greet.definition.input_schema == {
        "type": "object",
        "properties": {"person": PERSON_INPUT, "times": {"type": "integer", "default": 1}},
        "required": ["person"],
        "additionalProperties": False,
    }


def test_model_output_schema_uses_wire_names_and_requires_every_field() -> None:
    assert greet.definition.output_schema == {
        "type": "object",
        "properties": {"text": {"type": "string"}, "for": {"type": "string"}},
        "required": ["text", "for"],
        "additionalProperties": False,
    }


async def test_model_input_is_decoded_and_result_dumped_by_alias() -> None:
    person = {"name": "Ada", "age": 36, "address": {"city": "London", "zipCode": "12345"}}
    assert await greet.call({"person": person, "times": 1}) == {
        "text": "Hello, Ada of London!",
        "for": "Ada",
    }
    assert to_json(Address(city="Paris", zipCode=None)) == {"city": "Paris", "zipCode": None}


@pytest.mark.parametrize(
    ("person", "message"),
    [
        (
            {"name": "Ada", "age": "36", "address": {"city": "L"}},
            "field `person.age`: expected integer, got string",
        ),
        (
            {"name": "Ada", "age": -1, "address": {"city": "L"}},
            "field `person.age`: expected a number >= 0, got -1",
        ),
        ({"name": "Ada", "age": 1}, "field `person.address`: missing required field"),
        (
            {"name": "Ada", "age": 1, "address": {"city": "L", "zip_code": "1"}},
            "field `person.address.zip_code`: unexpected field (allowed fields: city, zipCode)",
        ),
        (
            {"name": "Ada", "age": 1, "address": {"city": "L", "zipCode": "1"}},
            'field `person.address.zipCode`: expected a string matching "^\\\\d{5}$"',
        ),
        # Checked by the model's own validators, after the schema: same message shape.
        (
            {"name": "Ada 2", "age": 1, "address": {"city": "L"}},
            "field `person.name`: Value error, a name has no digits",
        ),
    ],
)
async def test_bad_model_input_is_rejected_naming_the_field(
    person: dict[str, Any], message: str
) -> None:
    with pytest.raises(ToolArgumentsError) as caught:
        await greet.call({"person": person})
    assert str(caught.value) == f"invalid arguments for tool `greet`: {message}"


async def test_models_in_a_program() -> None:
    source = """
    const r = await tools.greet({ person: { name: "Bo", age: 3, address: { city: "Oslo" },
                                            shout: true } });
    text(r.text + " / " + r.for);
    try { await tools.greet({ person: { name: "B0", age: 3, address: { city: "x" } } }); }
    catch (e) { text(e); }
    """
    with trio.fail_after(SAFETY):
        async with CodeModeSession(tools=[greet]) as cm:
            items = await cm.exec(source)
            declaration = cm.exec_tool.description
    assert items[1:] == [
        Text("HELLO, BO OF OSLO! / Bo"),
        Text(
            "invalid arguments for tool `greet`: field `person.name`: "
            "Value error, a name has no digits"
        ),
    ]
    assert "City name." in declaration and "zipCode" in declaration


def test_pydantic_stays_optional() -> None:
    # Importing code_mode does not import pydantic; it is only looked at when a
    # function's hints name one of its models.
    code = "import sys, code_mode; print('pydantic' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


async def test_field_constraints_on_plain_parameters() -> None:
    @tool
    async def page(
        number: Annotated[int, Field(ge=1, description="1-based.")],
        tags: Annotated[list[str], Field(max_length=2)] = [],  # noqa: B006
    ) -> int:
        return number

    assert page.definition.input_schema["properties"] == {
        "number": {"type": "integer", "minimum": 1, "description": "1-based."},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2, "default": []},
    }
    with pytest.raises(ToolArgumentsError, match=r"field `tags`: expected at most 2 items"):
        await page.call({"number": 1, "tags": ["a", "b", "c"]})
    assert await page.call({"number": 3}) == 3
