"""Whether a server process on this machine is still alive, without waiting for its
heartbeat to lapse.

Servers sharing a SQLite store run on one machine, so a server that dies (SIGKILL, out
of memory) can be seen dead at once: its process is gone. The store records, with each
heartbeat, :func:`this_process`: the process id, its start time (so that a process id
the kernel gave again to another process is not mistaken for the server) and the
machine's boot and process-id namespace (so that a server in another container, whose
ids mean nothing here, or a record from before a reboot, is never judged by them).
Where ``/proc`` is missing (not Linux) nothing is recorded and only the heartbeat TTL
counts.
"""

from __future__ import annotations

import os
from pathlib import Path

import attrs

__all__ = ["Process", "is_gone", "this_process"]


@attrs.frozen
class Process:
    """A process as the store records it: its id, its ``machine`` (boot and process-id
    namespace) and when it ``started`` (equal only for the same process)."""

    pid: int
    machine: str
    started: str


def this_process() -> Process | None:
    """The calling process, or ``None`` where its identity cannot be read."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        return None
    pid = os.getpid()
    started = _start_time(pid)
    return Process(pid, f"{boot} {namespace}", started) if started is not None else None


def is_gone(recorded: Process, here: Process | None) -> bool:
    """Whether the ``recorded`` process is certainly dead, as seen from ``here`` (this
    process): it ran on the same boot in the same namespace, and no process with its id
    and start time runs now (a zombie counts as dead). ``False`` whenever that cannot be
    told: the heartbeat's TTL decides then."""
    if here is None or recorded.machine != here.machine:
        return False
    return _start_time(recorded.pid) != recorded.started


def _start_time(pid: int) -> str | None:
    """The process' start time in clock ticks since boot (``/proc/PID/stat``, field
    22), ``None`` for no such process, or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()  # after "pid (comm) ": field 3 on
    if len(fields) < 20 or fields[0] in ("Z", "X"):
        return None
    return fields[19]
