"""Store URLs (what is accepted, and one-line errors for the rest) and handles."""

from __future__ import annotations

import base64
import itertools
import os

import pytest

from code_mode.mcp_server.store import (
    HANDLE_BITS,
    StoreConfig,
    StoreConfigError,
    is_handle,
    missing_cell,
    new_handle,
    parse_store_url,
    same_handle,
)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("memory://", StoreConfig(scheme="memory")),
        ("redis://127.0.0.1:6379/0", StoreConfig(scheme="redis", host="127.0.0.1")),
        ("redis://redis", StoreConfig(scheme="redis", host="redis")),
        (
            "redis://:pw@h:7000/3",
            StoreConfig(scheme="redis", host="h", port=7000, db=3, password="pw"),
        ),
        (
            "rediss://u:pw@h/1?ca_certs=/etc/ca.pem",
            StoreConfig(
                scheme="rediss", host="h", db=1, username="u", password="pw", ca_certs="/etc/ca.pem"
            ),
        ),
        ("redis://[::1]:6379", StoreConfig(scheme="redis", host="::1")),
        (
            "sqlite:///var/lib/code-mode/s.db",
            StoreConfig(scheme="sqlite", path="/var/lib/code-mode/s.db"),
        ),
        ("sqlite://state/s.db", StoreConfig(scheme="sqlite", path=os.path.abspath("state/s.db"))),
        ("sqlite://s.db", StoreConfig(scheme="sqlite", path=os.path.abspath("s.db"))),
        ("sqlite:///my%20files/s.db", StoreConfig(scheme="sqlite", path="/my files/s.db")),
        (
            "sqlite:///s.db?max_cell_bytes=1000&max_bytes=9000",
            StoreConfig(scheme="sqlite", path="/s.db", max_cell_bytes=1000, max_bytes=9000),
        ),
    ],
)
def test_accepted_urls(url: str, expected: StoreConfig) -> None:
    assert parse_store_url(url) == expected


def test_a_sqlite_store_is_named_by_its_absolute_path() -> None:
    config = parse_store_url("sqlite://state/my%20s.db?max_bytes=9000")
    assert config.display == f"sqlite://{os.path.abspath('state')}/my%20s.db"
    assert parse_store_url(config.display).path == config.path


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("", "unknown store"),
        ("postgres://h/0", "unknown store postgres://"),
        ("127.0.0.1:6379", "unknown store"),
        ("redis://", "needs a host"),
        ("redis://:secret@h:notaport/0", "not a store URL"),
        ("redis://:secret@h:6379/99", "database must be a number from 0 to 15"),
        ("redis://:secret@h/x", "database must be a number"),
        ("redis://h/0?timeout=1", "unknown parameter 'timeout'"),
        ("redis://h/0?ca_certs=/x", "for rediss:// (TLS) only"),
        ("memory://x", "memory:// takes nothing"),
        ("sqlite://", "needs a file's path"),
        ("sqlite:///", "needs a file's path"),
        ("sqlite:///var/lib/", "needs a file's path"),
        ("sqlite://:memory:", "not a host"),
        ("sqlite:s.db", "a file's path after //"),
        ("sqlite://u:secret@host:5/s.db", "not a host"),
        ("sqlite:///s.db#x", "not a host or #fragment"),
        ("sqlite:///s.db?timeout=1", "unknown parameter 'timeout'"),
        ("sqlite:///s.db?max_bytes=-1", "max_bytes= takes a number of bytes"),
        ("sqlite:///s.db?max_cell_bytes=0", "max_cell_bytes= takes a number of bytes"),
    ],
)
def test_malformed_urls_say_why_in_one_line(url: str, why: str) -> None:
    with pytest.raises(StoreConfigError) as caught:
        parse_store_url(url)
    message = str(caught.value)
    assert why in message and "\n" not in message
    assert "secret" not in message


def test_handles_are_random_unique_and_of_one_shape() -> None:
    handles = {new_handle() for _ in range(10_000)}
    assert len(handles) == 10_000 and HANDLE_BITS >= 128
    assert all(is_handle(handle) for handle in handles)
    assert not any(is_handle(text) for text in ["", "1", "a" * 23, "a" * 25, "a" * 23 + "!"])
    # Not a counter, nor anything near one: handles minted one after another are far
    # apart, and each of the 144 bits is set in about half of them (10,000 handles: a
    # bit set in fewer than 4,500 or more than 5,500 is ten standard deviations off).
    in_order = [int.from_bytes(base64.urlsafe_b64decode(new_handle()), "big") for _ in range(1000)]
    assert all(abs(a - b) > 2**64 for a, b in itertools.pairwise(in_order))
    values = [int.from_bytes(base64.urlsafe_b64decode(handle), "big") for handle in handles]
    for bit in range(HANDLE_BITS):
        assert 4_500 <= sum(value >> bit & 1 for value in values) <= 5_500, bit
    one = new_handle()
    assert same_handle(one, one) and not same_handle(one, new_handle())
    assert not same_handle(one, one[:-1])


def test_unknown_handle_is_the_reference_not_found() -> None:
    assert str(missing_cell("abc").args[0]) == "exec cell abc not found"
    assert "x" * 65 not in str(missing_cell("x" * 1000).args[0])
