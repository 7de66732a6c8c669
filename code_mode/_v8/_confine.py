"""Confining a worker process: what a V8 exploit there could do is bounded.

A worker runs untrusted JavaScript in V8. Should a program exploit a V8 bug and run
native code, it would otherwise act as the host's user: start programs, open sockets,
write and read files. After V8 is initialised (its library and ICU data are loaded)
and before any isolate exists, :func:`confine` takes those away with what Linux offers
an unprivileged process, each mechanism on its own, so that a missing one leaves the
others in force:

* ``rlimits``: no core dumps (``RLIMIT_CORE`` 0), no file may grow (``RLIMIT_FSIZE``
  0), few open files (``RLIMIT_NOFILE``);
* ``no_new_privs``: ``PR_SET_NO_NEW_PRIVS``, so no set-uid program gains privileges
  (and required by the other two);
* ``seccomp``: a seccomp-bpf filter, on every thread of the process and inherited by
  the isolates' threads, refuses with ``EPERM``: new processes (``fork``, ``vfork``,
  ``clone`` without ``CLONE_THREAD``; ``clone3`` answers ``ENOSYS`` so that the C
  library falls back to ``clone``, whose flags the filter can read), ``execve``,
  sockets, opening a file for writing or creating one, changing the file system
  (``unlink``, ``rename``, ``mkdir``, ...), signals to other processes, ``ptrace``,
  ``io_uring``, ``bpf``, namespaces and mounts. Threads, memory mapping and
  protection (``mmap``, ``mprotect``, ``pkey_*``) and ``futex`` stay allowed: V8 needs
  them for every new isolate. x86-64 only; other architectures go without it.
* ``landlock`` (Linux 5.13 or later, when the kernel enables it): file access is
  limited to reading the interpreter's and the packages' directories, ``/proc``,
  ``/dev/urandom``, ``/dev/null``, time-zone data and CPU information; no writing,
  creating, removing or executing anywhere. From Landlock ABI 4 (Linux 6.7) TCP
  ``bind``/``connect`` are refused too, from ABI 6 (Linux 6.12) signals and abstract
  UNIX sockets outside the worker.

What could not be applied is returned, and the host logs it once: the worker still
runs, unconfined in that respect.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
import resource
import struct
import sys
from typing import Any, Final

_PR_SET_NO_NEW_PRIVS: Final = 38
_SECCOMP_SET_MODE_FILTER: Final = 1
_SECCOMP_FILTER_FLAG_TSYNC: Final = 1
_SYS_SECCOMP: Final = 317
_SYS_LANDLOCK_CREATE_RULESET: Final = 444
_SYS_LANDLOCK_ADD_RULE: Final = 445
_SYS_LANDLOCK_RESTRICT_SELF: Final = 446

#: Open files a worker may hold: its pipes, V8's and Python's few, and headroom.
MAX_OPEN_FILES: Final = 64

# -- seccomp-bpf -----------------------------------------------------------------------

_AUDIT_ARCH_X86_64: Final = 0xC000003E
_X32_SYSCALL_BIT: Final = 0x40000000
_RET_ALLOW: Final = 0x7FFF0000
_RET_ERRNO: Final = 0x00050000
_EPERM: Final = 1
_ENOSYS: Final = 38
_CLONE_THREAD: Final = 0x00010000
#: Flags of ``open``/``openat`` that write or create.
_WRITE_FLAGS: Final = (
    os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND | 0o20000000  # O_TMPFILE
)

#: System calls refused outright (x86-64 numbers).
_DENIED: Final = {
    "fork": 57, "vfork": 58, "execve": 59, "execveat": 322,
    "socket": 41, "socketpair": 53, "connect": 42, "accept": 43, "bind": 49, "listen": 50,
    "accept4": 288, "creat": 85, "truncate": 76, "rename": 82, "mkdir": 83, "rmdir": 84,
    "link": 86, "unlink": 87, "symlink": 88, "chmod": 90, "fchmod": 91, "chown": 92,
    "fchown": 93, "lchown": 94, "mknod": 133, "mkdirat": 258, "mknodat": 259,
    "fchownat": 260, "unlinkat": 263, "renameat": 264, "linkat": 265, "symlinkat": 266,
    "fchmodat": 268, "renameat2": 316, "ptrace": 101, "process_vm_readv": 310,
    "process_vm_writev": 311, "tkill": 200, "pidfd_open": 434, "pidfd_send_signal": 424,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "bpf": 321,
    "perf_event_open": 298, "name_to_handle_at": 303, "open_by_handle_at": 304,
    "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "unshare": 272,
    "setns": 308, "add_key": 248, "request_key": 249, "keyctl": 250,
}  # fmt: skip
_CLONE: Final = 56
_CLONE3: Final = 435
_OPEN: Final = 2
_OPENAT: Final = 257
_OPENAT2: Final = 437
#: Signals may go to this process only: the first argument is checked against our pid.
_SIGNAL_TO_PID: Final = {
    "kill": 62,
    "tgkill": 234,
    "rt_sigqueueinfo": 129,
    "rt_tgsigqueueinfo": 297,
}


def _ins(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k & 0xFFFFFFFF)


_LD_W_ABS: Final = 0x20
_JEQ_K: Final = 0x15
_JGE_K: Final = 0x35
_JSET_K: Final = 0x45
_RET_K: Final = 0x06


def _seccomp_program(pid: int) -> bytes:
    """The filter, as BPF instructions (``struct sock_filter``)."""
    allow = _ins(_RET_K, 0, 0, _RET_ALLOW)
    eperm = _ins(_RET_K, 0, 0, _RET_ERRNO | _EPERM)
    enosys = _ins(_RET_K, 0, 0, _RET_ERRNO | _ENOSYS)
    load_nr = _ins(_LD_W_ABS, 0, 0, 0)

    def arg_low(index: int) -> bytes:  # low 32 bits of argument ``index``
        return _ins(_LD_W_ABS, 0, 0, 16 + 8 * index)

    program = [
        _ins(_LD_W_ABS, 0, 0, 4),  # arch
        _ins(_JEQ_K, 1, 0, _AUDIT_ARCH_X86_64),
        eperm,
        load_nr,
        _ins(_JGE_K, 0, 1, _X32_SYSCALL_BIT),
        eperm,
    ]

    def check(number: int, *block: bytes) -> None:
        """``if nr == number: block`` (every block ends in a return)."""
        program.extend([load_nr, _ins(_JEQ_K, 0, len(block), number), *block])

    for number in sorted(_DENIED.values()):
        check(number, eperm)
    check(_CLONE3, enosys)
    check(_OPENAT2, enosys)
    check(_CLONE, arg_low(0), _ins(_JSET_K, 0, 1, _CLONE_THREAD), allow, eperm)
    check(_OPEN, arg_low(1), _ins(_JSET_K, 1, 0, _WRITE_FLAGS), allow, eperm)
    check(_OPENAT, arg_low(2), _ins(_JSET_K, 1, 0, _WRITE_FLAGS), allow, eperm)
    for number in _SIGNAL_TO_PID.values():
        check(number, arg_low(0), _ins(_JEQ_K, 1, 0, pid), eperm, allow)
    program.append(allow)
    return b"".join(program)


def _install_seccomp(libc: Any) -> str | None:
    if platform.machine() != "x86_64":
        return f"seccomp (no filter for {platform.machine()})"
    code = _seccomp_program(os.getpid())
    count = len(code) // 8
    buffer = ctypes.create_string_buffer(code, len(code))

    class _Prog(ctypes.Structure):
        _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))

    prog = _Prog(count, ctypes.cast(buffer, ctypes.c_void_p))
    result = libc.syscall(
        _SYS_SECCOMP, _SECCOMP_SET_MODE_FILTER, _SECCOMP_FILTER_FLAG_TSYNC, ctypes.byref(prog)
    )
    if result != 0:
        return f"seccomp ({os.strerror(ctypes.get_errno())})"
    return None


# -- Landlock --------------------------------------------------------------------------

_FS_EXECUTE: Final = 1 << 0
_FS_READ_FILE: Final = 1 << 2
_FS_READ_DIR: Final = 1 << 3
#: Every file-system right of each Landlock ABI (1: bits 0-12, 2: REFER, 3: TRUNCATE,
#: 5: IOCTL_DEV).
_FS_RIGHTS_BY_ABI: Final = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
_NET_TCP: Final = 0b11  # BIND_TCP | CONNECT_TCP (ABI 4)
_SCOPES: Final = 0b11  # ABSTRACT_UNIX_SOCKET | SIGNAL (ABI 6)


def _readable_paths() -> list[str]:
    """What a worker reads after start-up: Python and the packages it may still
    import, procfs, randomness, time zones, CPU information."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = {package, sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    paths.update(entry for entry in sys.path if entry)
    paths.update(
        ("/proc", "/dev/urandom", "/dev/null", "/etc/localtime", "/etc/timezone",
         "/usr/share/zoneinfo", "/sys/devices/system/cpu")
    )  # fmt: skip
    return sorted(path for path in paths if os.path.exists(path))


def _install_landlock(libc: Any) -> str | None:
    abi = libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, None, 0, 1)  # ..._VERSION
    if abi < 1:
        return f"landlock ({os.strerror(ctypes.get_errno())})"
    handled = max(rights for version, rights in _FS_RIGHTS_BY_ABI.items() if version <= abi)
    attr = struct.pack("QQQ", handled, _NET_TCP if abi >= 4 else 0, _SCOPES if abi >= 6 else 0)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, attr[:size], size, 0)
    if ruleset < 0:
        return f"landlock ({os.strerror(ctypes.get_errno())})"
    try:
        for path in _readable_paths():
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                rights = _FS_READ_FILE | (_FS_READ_DIR if os.path.isdir(path) else 0)
                rule = struct.pack("=Qi", rights, fd)
                libc.syscall(_SYS_LANDLOCK_ADD_RULE, ruleset, 1, rule, 0)  # PATH_BENEATH
            finally:
                os.close(fd)
        if libc.syscall(_SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0) != 0:
            return f"landlock ({os.strerror(ctypes.get_errno())})"
    finally:
        os.close(ruleset)
    return None


def _set_rlimits() -> str | None:
    missing = []
    for name, limit, value in (
        ("RLIMIT_CORE", resource.RLIMIT_CORE, 0),
        ("RLIMIT_FSIZE", resource.RLIMIT_FSIZE, 0),
        ("RLIMIT_NOFILE", resource.RLIMIT_NOFILE, MAX_OPEN_FILES),
    ):
        try:
            resource.setrlimit(limit, (value, value))
        except (OSError, ValueError):
            missing.append(name)
    return f"rlimits ({', '.join(missing)})" if missing else None


def confine() -> list[str]:
    """Confine this process (see the module docstring); call it once V8 is initialised
    and before any other thread starts. Returns what could not be applied."""
    if not sys.platform.startswith("linux"):
        return ["all confinement (not Linux)"]
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    missing = [problem for problem in (_set_rlimits(),) if problem]
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        # Without it, neither Landlock nor seccomp may be used unprivileged.
        return [*missing, "no_new_privs", "landlock", "seccomp"]
    for install in (_install_landlock, _install_seccomp):
        problem = install(libc)
        if problem:
            missing.append(problem)
    return missing
