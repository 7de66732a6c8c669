"""The Lua scripts of the Redis store: each multi-key step, atomic in Redis.

A script runs alone in Redis, so what it reads it can change without another client
in between: that makes a claim of a dead server's cells have exactly one winner, and a
session's check-then-write (it exists, so change its values) one step. ``ARGV[1]`` is
the TTL in milliseconds (0: none) where keys are refreshed, or the keys' prefix.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "APPEND_EVENT",
    "APPEND_JOURNAL",
    "CLAIM",
    "DEAD",
    "FINISH",
    "SAVE",
    "SEND",
    "SET_CURSOR",
    "TOUCH",
]

_REFRESH: Final = """
local function refresh(ttl, ...)
  if tonumber(ttl) > 0 then
    for _, key in ipairs({...}) do redis.call('PEXPIRE', key, ttl) end
  end
end
"""

TOUCH: Final = (
    _REFRESH
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
refresh(ARGV[1], KEYS[1], KEYS[2])
return 1
"""
)
"""KEYS: session marker, values. A session that exists is kept alive."""

SAVE: Final = (
    _REFRESH
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
for i = 2, #ARGV, 3 do
  if ARGV[i + 1] == '1' then redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 2])
  else redis.call('HDEL', KEYS[2], ARGV[i]) end
end
refresh(ARGV[1], KEYS[1], KEYS[2])
return 1
"""
)
"""KEYS: session marker, values; ARGV: ttl, then (key, '1' set / '0' delete, value)*."""

FINISH: Final = """
local server = redis.call('HGET', KEYS[1], 'server')
if server and server ~= '' then
  redis.call('SREM', ARGV[1] .. 'sc:' .. server, ARGV[2])
  redis.call('HSET', KEYS[1], 'server', '')
end
return 1
"""
"""KEYS: the cell; ARGV: prefix, cell. No server runs the cell any more."""

DEAD: Final = """
local dead = {}
for _, server in ipairs(redis.call('SMEMBERS', ARGV[1] .. 'servers')) do
  if redis.call('EXISTS', ARGV[1] .. 'srv:' .. server) == 0 then table.insert(dead, server) end
end
return dead
"""
"""ARGV: prefix. Registered servers without a live heartbeat."""

CLAIM: Final = """
local prefix, dead, claimant = ARGV[1], ARGV[2], ARGV[3]
if redis.call('EXISTS', prefix .. 'srv:' .. dead) == 1 then return {} end
if redis.call('SREM', prefix .. 'servers', dead) == 0 then return {} end
local out = {}
for _, cell in ipairs(redis.call('SMEMBERS', prefix .. 'sc:' .. dead)) do
  local key = prefix .. 'c:' .. cell
  local session = redis.call('HGET', key, 'session')
  if session then
    redis.call('HSET', key, 'server', claimant)
    redis.call('SADD', prefix .. 'sc:' .. claimant, cell)
    table.insert(out, cell)
    table.insert(out, session)
  end
end
redis.call('DEL', prefix .. 'sc:' .. dead)
redis.call('SADD', prefix .. 'servers', claimant)
for _, item in ipairs(redis.call('LRANGE', prefix .. 'q:' .. dead, 0, -1)) do
  redis.call('RPUSH', prefix .. 'q:' .. claimant, item)
end
redis.call('DEL', prefix .. 'q:' .. dead)
return out
"""
"""ARGV: prefix, dead server, claimant -> flat (cell, session)* claimed: empty for all
but the first claim of a dead server, and for a server still alive."""

APPEND_JOURNAL: Final = (
    _REFRESH
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local length = redis.call('RPUSH', KEYS[2], ARGV[2])
refresh(ARGV[1], KEYS[1], KEYS[2])
return length - 1
"""
)
"""KEYS: the cell, its journal; ARGV: ttl, entry -> its index (nil: unknown cell)."""

APPEND_EVENT: Final = (
    _REFRESH
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local offset = redis.call('XLEN', KEYS[2])
redis.call('XADD', KEYS[2], '0-' .. (offset + 1), 'e', ARGV[2])
refresh(ARGV[1], KEYS[1], KEYS[2])
return offset
"""
)
"""KEYS: the cell, its events; ARGV: ttl, event -> its offset (nil: unknown cell)."""

SEND: Final = """
local server = redis.call('HGET', KEYS[1], 'server')
if not server or server == '' then return 0 end
local queue = ARGV[1] .. 'q:' .. server
redis.call('RPUSH', queue, ARGV[2])
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then redis.call('PEXPIRE', queue, ttl) end
return 1
"""
"""KEYS: the cell; ARGV: prefix, 'command:cell' -> 1 when queued for its server."""

SET_CURSOR: Final = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'cursor', ARGV[1])
return 1
"""
