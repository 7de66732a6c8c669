"""The shared attrs validators (``code_mode._validators``), through the classes that use
them: one message shape (class, field, rule, value), TypeError for a wrong type,
ValueError for a value out of range."""

from __future__ import annotations

import math
from typing import Any

import pytest

from code_mode import EngineConfig, RuntimeConfig, YieldAfter

CASES = [
    ("RuntimeConfig", {"memory_limit_bytes": 0}, "a positive number, got 0"),
    ("RuntimeConfig", {"callback_grace": -1}, "a non-negative number, got -1"),
    ("RuntimeConfig", {"max_cell_seconds": math.nan}, "a positive number, got nan"),
    ("EngineConfig", {"worker_processes": 0}, "a positive integer, got 0"),
    ("EngineConfig", {"warm_isolates": -1}, "a non-negative integer, got -1"),
    ("EngineConfig", {"recycle_after_cells": 0}, "a positive integer, got 0"),
    ("EngineConfig", {"worker_heartbeat_timeout": math.inf}, "a positive finite number, got inf"),
    ("YieldAfter", {"seconds": -1}, "a non-negative number, got -1"),
    ("YieldAfter", {"seconds": math.nan}, "a non-negative number, got nan"),
]
CLASSES: dict[str, Any] = {
    "RuntimeConfig": RuntimeConfig,
    "EngineConfig": EngineConfig,
    "YieldAfter": YieldAfter,
}


@pytest.mark.parametrize(("owner", "fields", "rule"), CASES)
def test_a_value_out_of_range_is_a_value_error_naming_class_and_field(
    owner: str, fields: dict[str, Any], rule: str
) -> None:
    with pytest.raises(ValueError) as caught:
        CLASSES[owner](**fields)
    [field] = fields
    assert str(caught.value) == f"{owner}.{field} must be {rule}"


@pytest.mark.parametrize(
    "make",
    [
        lambda: RuntimeConfig(memory_limit_bytes="1"),
        lambda: RuntimeConfig(memory_limit_bytes=True),
        lambda: EngineConfig(worker_processes=1.0),
        lambda: EngineConfig(warm_isolates=False),
        lambda: YieldAfter("1"),
    ],
)
def test_a_value_of_the_wrong_type_is_a_type_error(make: Any) -> None:
    with pytest.raises(TypeError, match=r"must be a"):
        make()


def test_limits_that_are_off_or_unbounded_are_accepted() -> None:
    assert EngineConfig(recycle_after_cells=None).recycle_after_cells is None
    assert RuntimeConfig(max_cell_seconds=math.inf).max_cell_seconds == math.inf
    assert YieldAfter(0).seconds == 0
