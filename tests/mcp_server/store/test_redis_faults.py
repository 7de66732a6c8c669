"""The Redis store's faults: bad credentials, unreachable, stopped while serving; and
its password, which no message, repr or log line shows."""

from __future__ import annotations

import logging

import pytest
import trio

from code_mode.mcp_server.store import StoreUnavailable, open_store, parse_store_url

from .redis_server import RedisServer, free_port

BOUND = 20.0


async def test_wrong_password_is_named_and_not_shown(redis_server: RedisServer) -> None:
    url = f"redis://:not-the-password@127.0.0.1:{redis_server.port}/0"
    with pytest.raises(StoreUnavailable) as caught:
        async with open_store(url, session_ttl=60):
            pass
    message = str(caught.value)
    assert "wrong password" in message
    assert "not-the-password" not in message
    assert f"127.0.0.1:{redis_server.port}" in message


async def test_missing_password_is_named(redis_server: RedisServer) -> None:
    with pytest.raises(StoreUnavailable, match="requires a password"):
        async with open_store(f"redis://127.0.0.1:{redis_server.port}/0", session_ttl=60):
            pass


async def test_unreachable_store_fails_at_start_up_in_one_line() -> None:
    url = f"redis://:pw-xyz@127.0.0.1:{free_port()}/0"
    with trio.fail_after(BOUND), pytest.raises(StoreUnavailable) as caught:
        async with open_store(url, session_ttl=60):
            pass
    message = str(caught.value)
    assert "\n" not in message and "pw-xyz" not in message
    assert "is unavailable" in message


async def test_redis_stopped_while_serving_then_back(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with open_store(redis_server.url, session_ttl=60) as store:
        session = await store.new_session()
        assert await store.save_values(session, {"k": "v"})
        redis_server.stop()
        for operation in (
            store.new_session(),
            store.load_values(session),
            store.read_events(session, 0, timeout=0.1),
            store.heartbeat("server-a"),
        ):
            with trio.fail_after(BOUND), pytest.raises(StoreUnavailable) as caught:
                await operation
            message = str(caught.value)
            assert f"127.0.0.1:{redis_server.port}" in message, message
            assert redis_server.password not in message  # type: ignore[operator]
        redis_server.start()  # empty again (no persistence): the store serves anew
        with trio.fail_after(BOUND):
            while True:
                try:
                    session = await store.new_session()
                    break
                except StoreUnavailable:
                    await trio.sleep(0.05)
        assert await store.load_values(session) == {}
        cell = await store.register_cell(session, "server-a")
        assert await store.append_event(cell, "back") == 0  # scripts are loaded again
    assert redis_server.password not in caplog.text  # type: ignore[operator]


def test_store_config_never_shows_the_password(caplog: pytest.LogCaptureFixture) -> None:
    config = parse_store_url("rediss://alice:p%40ss-W0rd@redis.internal:6380/2")
    assert config.password == "p@ss-W0rd" and config.username == "alice"
    logger = logging.getLogger("test.store")
    with caplog.at_level(logging.INFO):
        logger.info("store %s %r %s", config, config, config.display)
    shown = [str(config), repr(config), config.display, caplog.text, f"{config!s}"]
    for text in shown:
        assert "p@ss-W0rd" not in text and "p%40ss" not in text, text
    assert str(config) == "rediss://alice:***@redis.internal:6380/2"
