"""The Linux primitives the sandbox stands on, called through ctypes.

Python 3.11 has no ``os.unshare``, no Landlock and no seccomp bindings, so the
syscalls are made here directly. Everything in this module is stdlib-only and
is imported by the zygote before it drops privileges: after ``setuid`` the
interpreter's own files may no longer be readable (``/root`` is mode 700).

The seccomp filter is hand-built BPF rather than PyPI ``pyseccomp``: the filter
is a short deny list (about thirty syscalls and one flags check), it is built
once per zygote, and it avoids a native dependency that may be missing on a
host (libseccomp) exactly where the rest of the sandbox works.
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct
from collections.abc import Iterable

__all__ = [
    "CLONE_NEWIPC",
    "CLONE_NEWNET",
    "CLONE_NEWPID",
    "CLONE_NEWUSER",
    "CLONE_NEWUTS",
    "KernelError",
    "LandlockRuleset",
    "landlock_abi",
    "mount_tmpfs",
    "no_new_privs",
    "seccomp_filter",
    "seccomp_install",
    "set_dumpable",
    "set_pdeathsig",
    "sethostname",
    "unshare",
]

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_NEWTIME = 0x00000080
_ALL_NAMESPACE_FLAGS = (
    CLONE_NEWNS
    | CLONE_NEWCGROUP
    | CLONE_NEWUTS
    | CLONE_NEWIPC
    | CLONE_NEWUSER
    | CLONE_NEWPID
    | CLONE_NEWNET
    | CLONE_NEWTIME
)

_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2

# The process's own symbols (libc among them): ctypes.util.find_library would
# import subprocess, hence threading, into the zygote (see _zygote's lazy modules).
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.prctl.restype = ctypes.c_int
_libc.prctl.argtypes = [
    ctypes.c_int,
    ctypes.c_ulong,
    ctypes.c_ulong,
    ctypes.c_ulong,
    ctypes.c_ulong,
]
_libc.unshare.argtypes = [ctypes.c_int]
_libc.mount.argtypes = [
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_ulong,
    ctypes.c_char_p,
]
_libc.sethostname.argtypes = [ctypes.c_char_p, ctypes.c_size_t]


class KernelError(OSError):
    """A sandbox syscall failed; ``errno`` says why (ENOSYS: the host lacks the feature)."""


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise KernelError(err, f"{what}: {os.strerror(err)}")
    return result


def _prctl(option: int, arg2: int = 0, arg3: int = 0, what: str = "prctl") -> int:
    return _check(_libc.prctl(option, arg2, arg3, 0, 0), what)


def unshare(flags: int) -> None:
    """Move the calling process into new namespaces (``unshare(2)``)."""
    _check(_libc.unshare(flags), "unshare")


_MS_NOSUID = 2
_MS_NODEV = 4
_MS_REC = 16384
_MS_PRIVATE = 1 << 18


def mount_tmpfs(target: str, options: str) -> None:
    """Mount a tmpfs with ``options`` on ``target``, in this process's own mount namespace.

    Every mount is made private first, so that nothing mounted here propagates
    back to the host's namespace (the caller has unshared ``CLONE_NEWNS``).
    """
    _check(_libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None), "mount(MS_PRIVATE)")
    # Not noexec: a compiled candidate runs from here (Landlock grants the run
    # directory execute, seccomp and the run's uid hold as for any program).
    flags = _MS_NOSUID | _MS_NODEV
    _check(
        _libc.mount(b"tmpfs", target.encode(), b"tmpfs", flags, options.encode()),
        f"mount(tmpfs on {target})",
    )


def sethostname(name: str) -> None:
    """Set the host name of the current UTS namespace."""
    raw = name.encode()
    _check(_libc.sethostname(raw, len(raw)), "sethostname")


def set_pdeathsig(sig: int) -> None:
    """Have the kernel send ``sig`` to this process when its parent dies."""
    _prctl(_PR_SET_PDEATHSIG, sig, what="PR_SET_PDEATHSIG")


def set_dumpable(on: bool) -> None:
    """Set the dumpable flag; off keeps same-uid processes out of our ``/proc`` entries."""
    _prctl(_PR_SET_DUMPABLE, int(on), what="PR_SET_DUMPABLE")


def no_new_privs() -> None:
    """Forbid gaining privileges through exec (setuid binaries, file capabilities)."""
    _prctl(_PR_SET_NO_NEW_PRIVS, 1, what="PR_SET_NO_NEW_PRIVS")


# --- Landlock ---------------------------------------------------------------

_SYS_LANDLOCK_CREATE_RULESET = 444  # the same number on every architecture
_SYS_LANDLOCK_ADD_RULE = 445
_SYS_LANDLOCK_RESTRICT_SELF = 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_RULE_PATH_BENEATH = 1

FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

FS_READ = FS_READ_FILE | FS_READ_DIR
FS_WRITE = (
    FS_WRITE_FILE
    | FS_REMOVE_DIR
    | FS_REMOVE_FILE
    | FS_MAKE_DIR
    | FS_MAKE_REG
    | FS_MAKE_SYM
    | FS_TRUNCATE
)


def _fs_access_for(abi: int) -> int:
    """Return every filesystem right this ABI knows (all of them are handled, i.e. denied)."""
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    if abi >= 5:
        rights |= FS_IOCTL_DEV
    return rights


def landlock_abi() -> int:
    """Return the host's Landlock ABI version, or 0 when Landlock is unavailable."""
    result = _libc.syscall(
        _SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), _LANDLOCK_CREATE_RULESET_VERSION
    )
    return max(0, int(result))


class LandlockRuleset:
    """A Landlock ruleset built once (in the zygote) and applied with :meth:`restrict_self`.

    Every filesystem right the host's ABI knows is handled, so anything not
    granted by a rule is denied; TCP bind and connect are handled with no rule
    (no network); with ABI 6 and later, signals and abstract unix sockets are
    scoped to the domain.
    """

    def __init__(self, *, handle_fs: bool = True, scope: bool = True) -> None:
        self.abi = landlock_abi()
        if self.abi < 1:
            raise KernelError(38, "landlock is not available on this kernel")
        self.handled_fs = _fs_access_for(self.abi) if handle_fs else 0
        self.handled_net = NET_BIND_TCP | NET_CONNECT_TCP if self.abi >= 4 else 0
        self.scoped = SCOPE_SIGNAL | SCOPE_ABSTRACT_UNIX_SOCKET if scope and self.abi >= 6 else 0
        if self.abi >= 6:
            attr = struct.pack("=QQQ", self.handled_fs, self.handled_net, self.scoped)
        elif self.abi >= 4:
            attr = struct.pack("=QQ", self.handled_fs, self.handled_net)
        else:
            attr = struct.pack("=Q", self.handled_fs)
        buf = ctypes.create_string_buffer(attr, len(attr))
        self.fd = _check(
            _libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, buf, ctypes.c_size_t(len(attr)), 0),
            "landlock_create_ruleset",
        )

    def allow(self, path: str, access: int) -> bool:
        """Grant ``access`` beneath ``path``; return False when the path does not exist."""
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except FileNotFoundError:
            return False
        try:
            if not os.path.isdir(path):
                # Directory-only rights on a file make the rule invalid (EINVAL).
                access &= FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
            access &= self.handled_fs
            attr = struct.pack("=Qi", access, fd)
            buf = ctypes.create_string_buffer(attr, len(attr))
            _check(
                _libc.syscall(_SYS_LANDLOCK_ADD_RULE, self.fd, _LANDLOCK_RULE_PATH_BENEATH, buf, 0),
                f"landlock_add_rule({path})",
            )
        finally:
            os.close(fd)
        return True

    def restrict_self(self) -> None:
        """Enter the ruleset's domain (needs no_new_privs or CAP_SYS_ADMIN); irreversible."""
        _check(_libc.syscall(_SYS_LANDLOCK_RESTRICT_SELF, self.fd, 0), "landlock_restrict_self")

    def close(self) -> None:
        """Close the ruleset's file descriptor."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


# --- seccomp ----------------------------------------------------------------

_AUDIT_ARCH_X86_64 = 0xC000003E
_X32_SYSCALL_BIT = 0x40000000
_SECCOMP_RET_KILL_PROCESS = 0x80000000
_SECCOMP_RET_ERRNO = 0x00050000
_SECCOMP_RET_ALLOW = 0x7FFF0000
_ENOSYS = 38
_EACCES = 13
_AF_UNIX = 1

# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6];
_OFF_NR = 0
_OFF_ARCH = 4
_OFF_ARG0_LO = 16  # little-endian: the low 32 bits of args[0]

_BPF_LD_W_ABS = 0x20
_BPF_JEQ_K = 0x15
_BPF_JGE_K = 0x35
_BPF_JSET_K = 0x45
_BPF_RET_K = 0x06

#: Denied syscalls on x86_64, by name (the process is killed with SIGSYS).
DENIED_SYSCALLS_X86_64: dict[str, int] = {
    "socket": 41,  # no new sockets of any family (AF_UNIX: EACCES, not a kill)
    "ptrace": 101,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "mount": 165,
    "umount2": 166,
    "pivot_root": 155,
    "chroot": 161,
    "unshare": 272,
    "setns": 308,
    "bpf": 321,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "perf_event_open": 298,
    "userfaultfd": 323,
    "keyctl": 250,
    "add_key": 248,
    "request_key": 249,
    "kexec_load": 246,
    "kexec_file_load": 320,
    "init_module": 175,
    "finit_module": 313,
    "delete_module": 176,
    "open_by_handle_at": 304,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "mount_setattr": 442,
    "swapon": 167,
    "swapoff": 168,
    "reboot": 169,
    "acct": 163,
}
_SYS_CLONE = 56
_SYS_CLONE3 = 435


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k & 0xFFFFFFFF)


def seccomp_filter(denied: Iterable[int] | None = None) -> bytes:
    """Build the BPF program: the deny list kills the process; everything else is allowed.

    Besides the deny list: a foreign architecture or the x32 ABI is killed (a
    classic way around per-number filters); ``clone`` with any namespace flag is
    killed; ``clone3`` (whose flags live in memory a filter cannot read) fails
    with ENOSYS, which makes glibc fall back to ``clone``.

    Raises:
        KernelError: on an architecture whose syscall numbers are not known here.
    """
    if platform.machine() != "x86_64":
        raise KernelError(_ENOSYS, f"no seccomp syscall table for {platform.machine()}")
    numbers = sorted(set(DENIED_SYSCALLS_X86_64.values() if denied is None else denied))
    kill = _SECCOMP_RET_KILL_PROCESS
    prog = [
        _insn(_BPF_LD_W_ABS, 0, 0, _OFF_ARCH),
        _insn(_BPF_JEQ_K, 1, 0, _AUDIT_ARCH_X86_64),
        _insn(_BPF_RET_K, 0, 0, kill),
        _insn(_BPF_LD_W_ABS, 0, 0, _OFF_NR),
        _insn(_BPF_JGE_K, 0, 1, _X32_SYSCALL_BIT),
        _insn(_BPF_RET_K, 0, 0, kill),
        _insn(_BPF_JEQ_K, 0, 1, _SYS_CLONE3),
        _insn(_BPF_RET_K, 0, 0, _SECCOMP_RET_ERRNO | _ENOSYS),
    ]
    socket_nr = DENIED_SYSCALLS_X86_64["socket"]
    if socket_nr in numbers:
        # A local socket is refused with EACCES rather than killed: runtimes ask
        # for one on their own (a JVM's user look-up tries nscd's socket) and
        # carry on without it. Every other family is killed as before.
        numbers.remove(socket_nr)
        prog += [
            _insn(_BPF_JEQ_K, 0, 4, socket_nr),
            _insn(_BPF_LD_W_ABS, 0, 0, _OFF_ARG0_LO),
            _insn(_BPF_JEQ_K, 0, 1, _AF_UNIX),
            _insn(_BPF_RET_K, 0, 0, _SECCOMP_RET_ERRNO | _EACCES),
            _insn(_BPF_RET_K, 0, 0, kill),
        ]
    for nr in numbers:
        prog += [_insn(_BPF_JEQ_K, 0, 1, nr), _insn(_BPF_RET_K, 0, 0, kill)]
    prog += [
        _insn(_BPF_JEQ_K, 0, 3, _SYS_CLONE),
        _insn(_BPF_LD_W_ABS, 0, 0, _OFF_ARG0_LO),
        _insn(_BPF_JSET_K, 0, 1, _ALL_NAMESPACE_FLAGS),
        _insn(_BPF_RET_K, 0, 0, kill),
        _insn(_BPF_RET_K, 0, 0, _SECCOMP_RET_ALLOW),
    ]
    return b"".join(prog)


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


def seccomp_install(program: bytes) -> None:
    """Load a BPF program built by :func:`seccomp_filter` (needs no_new_privs); irreversible."""
    buf = ctypes.create_string_buffer(program, len(program))
    prog = _SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
    _check(
        _libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(prog), 0, 0),
        "seccomp",
    )
