"""The trusted pytest process: runs a task's test files against a proxy of the candidate's module.

Started by :mod:`arbiter.graders.sandbox.suite_host` as a clean interpreter (empty
environment, never a fork of the service), it imports pytest, warms it up, and
forks one child per suite. The child never runs candidate code: the module the
tests import under the candidate's name is built here, and every global in it
is data decoded from the sandbox or a :class:`~arbiter.graders.sandbox.proxy.RemoteObject`
handle into the confined child that loaded the candidate. So every value that
reaches an assert is an exact builtin value (or a handle that equals only
itself), every comparison is made by this process, and the report it writes
on its descriptor is a verdict, not a claim.

What runs where: test collection, fixtures (``tmp_path``, ``monkeypatch``,
``capsys`` included), ``parametrize``, test classes, ``pytest.raises`` and
``approx`` all run here; only the candidate's own functions and methods run in
the sandbox, one request at a time.
"""

from __future__ import annotations

import contextlib
import gc
import json
import math
import os
import resource
import shutil
import signal
import socket
import sys
import tempfile
import traceback
import types
from typing import Any

import pytest

from arbiter.graders.sandbox import _linux as kernel
from arbiter.graders.sandbox._frames import CONTROL_MAX_BYTES, recv_frame_with_fds, send_frame
from arbiter.graders.sandbox.clock import DeadlineView
from arbiter.graders.sandbox.proxy import (
    CandidateError,
    Channel,
    ChannelBroken,
    LoadResult,
    Neutral,
)

#: Hardened flags: no conftest, no ini file, no cache, no plugin autoload (env),
#: nothing above the tests directory is consulted.
FLAGS = (
    "-q",
    "-p",
    "no:cacheprovider",
    "-p",
    "no:unraisableexception",
    "-p",
    "no:threadexception",
    "--noconftest",
    "-c",
    "/dev/null",
    "--color=no",
)


def _cause(longrepr: Any) -> str:
    """Return the name of the exception a collection error reports (``TypeError``)."""
    crash = getattr(longrepr, "reprcrash", None)
    message = getattr(crash, "message", None)
    if not isinstance(message, str):
        # An import error is reported as text: its last ``E`` line names the exception.
        lines = [line[1:].strip() for line in str(longrepr).splitlines() if line.startswith("E")]
        message = lines[-1] if lines else ""
    return message.split(":", 1)[0].strip()[:200]


class Collector:
    """A plugin that records each test's outcome by node id."""

    def __init__(self) -> None:
        self.outcomes: dict[str, str] = {}
        self.collect_errors: list[str] = []
        #: A file that failed to collect → the exception that stopped it.
        self.causes: dict[str, str] = {}
        self.collected = 0

    def pytest_collectreport(self, report: Any) -> None:
        """Remember a file that failed to collect, and why."""
        if report.failed:
            self.collect_errors.append(str(report.nodeid))
            self.causes[str(report.nodeid)] = _cause(report.longrepr)

    def pytest_collection_modifyitems(self, items: list[Any]) -> None:
        """Count the tests collected."""
        self.collected = len(items)

    def pytest_runtest_logreport(self, report: Any) -> None:
        """Record a test's outcome (a failure in any phase wins over a pass)."""
        nodeid = str(report.nodeid)
        previous = self.outcomes.get(nodeid)
        if report.failed:
            self.outcomes[nodeid] = "failed"
        elif report.skipped and previous is None:
            self.outcomes[nodeid] = "skipped"
        elif report.when == "call" and report.passed and previous is None:
            self.outcomes[nodeid] = "passed"


_BROKEN = ("timeout", "exited", "garbled", "output_limit")


class CandidateModule(types.ModuleType):
    """The candidate's module as the tests see it: data and handles, nothing of its code."""

    __all__: list[str]


class _ModuleGetattr:
    """A stand-in module's ``__getattr__``: a name the tests did not name, read when asked.

    ``getattr(solution, name)`` with a name computed at run time reads that
    global from the sandbox then (data, or a handle that may only be called);
    a name the candidate does not define is an AttributeError, as on a module.
    """

    def __init__(self, module: str, channel: Channel) -> None:
        self.module = module
        self.channel = channel

    def __call__(self, attribute: str) -> Any:
        if attribute.startswith("__") or not attribute.isidentifier():
            raise AttributeError(f"module {self.module!r} has no attribute {attribute!r}")
        try:
            return self.channel.do("global", None, name=attribute)
        except CandidateError:
            raise AttributeError(f"module {self.module!r} has no attribute {attribute!r}") from None


def candidate_module(
    name: str, channel: Channel, load: LoadResult, declared: list[str]
) -> CandidateModule:
    """Build the stand-in for the candidate's module from what loading it reported.

    Only the ``declared`` names (what the tests import or read from the module)
    are set, so ``from solution import *`` cannot replace a test's own imports or
    builtins; any other name is read from the sandbox when a test asks for it
    (``getattr(solution, name)``). Functions become handles that may be called,
    the names the task uses as classes handles that construct instances
    (:attr:`Channel.classes`, decided here, never by the load report); other
    globals are fetched once, as data; the candidate's exception classes
    become classes made here that derive from the same builtin exception, so
    that ``pytest.raises(solution.Invalid)`` catches what the candidate raises.
    Modules the candidate imported are never imported here by their name.
    """
    module = CandidateModule(name)
    module.__file__ = f"<the candidate's {name}.py, in the sandbox>"
    exported = []
    wanted = set(declared)
    for global_name, kind in load.names.items():
        # The list comes from the candidate's process: only a declared plain
        # identifier (never a dunder such as ``__getattr__``) is set here.
        if global_name not in wanted or kind == "module" or not global_name.isidentifier():
            continue
        if global_name.startswith("__"):
            continue
        if kind.startswith("exception:"):
            setattr(module, global_name, channel.exception_stand_in(global_name, kind))
        else:
            setattr(module, global_name, channel.do("global", None, name=global_name))
        exported.append(global_name)
    module.__all__ = [n for n in exported if not n.startswith("_")]
    module.__getattr__ = _ModuleGetattr(name, channel)  # type: ignore[method-assign]
    return module


def neutral_module(name: str, declared: list[str]) -> types.ModuleType:
    """Return a stand-in whose declared names are all :class:`Neutral` placeholders.

    Collecting the tests against it tells a task whose tests cannot even be
    collected from a candidate whose module makes collection fail.
    """
    module = types.ModuleType(name)
    for global_name in declared:
        setattr(module, global_name, Neutral())
    module.__all__ = list(declared)  # type: ignore[attr-defined]
    module.__getattr__ = _neutral_attribute  # type: ignore[method-assign]
    return module


def _neutral_attribute(attribute: str) -> Any:
    if attribute.startswith("__"):
        raise AttributeError(attribute)
    return Neutral()


class _LoadFailed:
    """The stand-in module when the candidate did not load: every attribute read fails."""

    def __init__(self, message: str) -> None:
        self.message = message

    def __call__(self, attribute: str) -> Any:
        raise ImportError(f"the candidate's module did not load: {self.message}")


class ChannelGuard:
    """Fails a test during which the channel broke or refused a value, even if it caught that.

    ``ChannelBroken`` and ``Uncrossable`` are BaseExceptions, so ``except
    Exception`` lets them through; a bare ``except:`` in a test would not, and
    this makes that test fail all the same.
    """

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.tainted: dict[str, str] = {}

    def _watch(self, item: Any) -> Any:
        before = len(self.channel.events)
        try:
            return (yield)
        finally:
            if len(self.channel.events) > before:
                self.tainted[str(item.nodeid)] = self.channel.events[-1]

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: Any) -> Any:
        """Watch the test's fixtures (they may call the candidate)."""
        return (yield from self._watch(item))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: Any) -> Any:
        """Watch the test itself."""
        return (yield from self._watch(item))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: Any, call: Any) -> Any:
        """Fail a test that passed although it swallowed a sandbox failure."""
        report = yield
        nodeid = str(item.nodeid)
        if call.when == "call" and nodeid in self.tainted and report.passed:
            report.outcome = "failed"
            report.longrepr = f"the test swallowed a sandbox failure: {self.tainted[nodeid]}"
        return report


def _load(channel: Channel) -> tuple[LoadResult | None, str]:
    try:
        load = channel.load()
    except ChannelBroken as e:
        return None, f"{e.reason}: {e.detail}"
    if not load.ok:
        return None, f"{load.error_type}: {load.error_message}"
    return load, ""


def run_suite(request: dict[str, Any], chan_fd: int, report_fd: int, deadline_fd: int) -> None:
    """Run one suite (in a forked child) and write its one-line report to ``report_fd``."""
    root = tempfile.mkdtemp(prefix="suite-")
    tests_dir = os.path.join(root, "tests")
    os.mkdir(tests_dir)
    for path, text in request["sources"].items():
        with open(os.path.join(tests_dir, path), "w", encoding="utf-8") as f:
            f.write(text)
    # The tests' own temporary files go under the suite's directory, removed with it.
    os.environ["TMPDIR"] = root
    tempfile.tempdir = root
    os.chdir(root)
    out = os.open(os.path.join(root, "output"), os.O_RDWR | os.O_CREAT, 0o600)
    os.dup2(out, 1)
    os.dup2(out, 2)
    # The tests' own work on what the candidate returns is bounded here: memory by
    # the address space, CPU by the kernel (the host also watches it, see suite_host).
    memory = int(request.get("memory_mb") or 0) << 20
    if memory:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    cpu_s = float(request.get("cpu_s") or 0)
    if cpu_s:
        used = resource.getrusage(resource.RUSAGE_SELF)
        limit = math.ceil(used.ru_utime + used.ru_stime + cpu_s)
        resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 1))
    # The run's deadline, as the pool moves it (the run's credited waits for a CPU).
    channel = Channel(
        socket.socket(fileno=chan_fd),
        DeadlineView(deadline_fd),
        max_bytes=request["max_bytes"],
        classes=frozenset(str(n) for n in request.get("classes") or []),
    )
    report: dict[str, Any] = {"load_error": "", "status": None}
    try:
        load, report["load_error"] = _load(channel)
        name = str(request["module"])
        declared = [str(n) for n in request.get("declared") or []]
        if load is None:
            failed = types.ModuleType(name)
            failed.__getattr__ = _LoadFailed(report["load_error"])  # type: ignore[method-assign]
            sys.modules[name] = failed
        else:
            sys.modules[name] = candidate_module(name, channel, load, declared)
        collector, guard = Collector(), ChannelGuard(channel)
        sys.dont_write_bytecode = True
        args = [*FLAGS, "--rootdir", tests_dir, "--confcutdir", tests_dir, tests_dir]
        report["status"] = int(pytest.main(args, plugins=[collector, guard]))
        report.update(
            outcomes=collector.outcomes,
            collected=collector.collected,
            collect_errors=collector.collect_errors,
        )
        if collector.collect_errors and load is not None:
            # Whose fault: the same files collected against placeholders. Only
            # files that fail with them too, and the same way, are the task's: a
            # value the placeholders cannot stand for (``json.loads(solution.DATA)``)
            # fails differently, and then it is the candidate's that broke them.
            causes = _collects(name, declared, tests_dir)
            report["collects_without_candidate"] = causes == {}
            report["fails_alike"] = causes == collector.causes
            # A name the tests import that the candidate left out is its fault, however
            # the placeholders fared (they stand in for a value, not for every use of one).
            report["missing"] = [n for n in declared if n not in load.names][:50]
    except BaseException:
        # Building the module met a dead or garbled run, or a name list that the
        # module refuses (a forged load report): every test fails, and says why.
        report["error"] = traceback.format_exc(limit=3)[-2000:]
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    channel.check_quiet()
    report["broken"] = channel.broken.reason if channel.broken is not None else None
    report["broken_detail"] = channel.broken.detail[:500] if channel.broken is not None else ""
    report["events"] = channel.events[:50]
    report["flags"] = channel.flags[:20]
    with contextlib.suppress(OSError):
        size = os.fstat(out).st_size
        report["output_tail"] = os.pread(out, 2000, max(0, size - 2000)).decode(errors="replace")
    os.write(report_fd, (json.dumps(report) + "\n").encode())
    shutil.rmtree(root, ignore_errors=True)


def _collects(name: str, declared: list[str], tests_dir: str) -> dict[str, str] | None:
    """Collect the test files with the candidate's names as placeholders.

    Return the files that fail to collect then, each with the exception that
    stopped it (empty: they all collect), or None if pytest itself failed.
    """
    for loaded in [m for m in sys.modules if m.startswith("test_") or m.endswith("_test")]:
        del sys.modules[loaded]
    sys.modules[name] = neutral_module(name, declared)
    collector = Collector()
    args = [*FLAGS, "--collect-only", "--rootdir", tests_dir, "--confcutdir", tests_dir, tests_dir]
    try:
        pytest.main(args, plugins=[collector])
    except BaseException:
        return None
    return collector.causes


def _warm_up() -> None:
    """Run one trivial session so that pytest's lazy imports happen once, in the host."""
    root = tempfile.mkdtemp(prefix="warm-")
    try:
        with open(os.path.join(root, "test_warm_up.py"), "w") as f:
            f.write("import pytest\n\n@pytest.mark.parametrize('x', [1])\n")
            f.write("def test_warm_up(x, tmp_path):\n    assert x == pytest.approx(1.0)\n")
        devnull = os.open(os.devnull, os.O_WRONLY)
        saved = os.dup(1)
        os.dup2(devnull, 1)
        try:
            pytest.main([*FLAGS, "--rootdir", root, "--confcutdir", root, root])
        finally:
            # Its output is still in sys.stdout's buffer: out with it before fd 1 is back.
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)
            os.close(devnull)
    finally:
        shutil.rmtree(root, ignore_errors=True)
        for name in list(sys.modules):
            if name.startswith("test_warm_up"):
                del sys.modules[name]


def main() -> None:
    """Serve suites on the control socket whose fd is ``sys.argv[1]``: one fork per suite."""
    kernel.set_pdeathsig(signal.SIGKILL)
    ctrl = socket.socket(fileno=int(sys.argv[1]))
    # Honest results may be integers of any size, and tests print or parse them;
    # every suite runs under the run's deadline, which bounds the conversions.
    sys.set_int_max_str_digits(0)
    _warm_up()
    # What the host holds now (pytest, its plugins) is never garbage: frozen, a
    # suite's collections skip it and its pages stay shared with the host.
    gc.collect()
    gc.freeze()
    # Children are reaped by the kernel: the host answers with a pid and forgets it.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    send_frame(ctrl, {"op": "ready", "pid": os.getpid()})
    while True:
        try:
            request, fds = recv_frame_with_fds(ctrl, max_bytes=CONTROL_MAX_BYTES)
        except EOFError:
            break
        if len(fds) != 3:
            for fd in fds:
                os.close(fd)
            send_frame(ctrl, {"op": "refused", "detail": "a suite needs three descriptors"})
            continue
        pid = os.fork()
        if pid == 0:
            status = 0
            try:
                ctrl.close()
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                kernel.set_pdeathsig(signal.SIGKILL)
                run_suite(request, fds[0], fds[1], fds[2])
            except BaseException:
                status = 70
                with contextlib.suppress(BaseException):
                    traceback.print_exc()
            os._exit(status)
        for fd in fds:
            os.close(fd)
        send_frame(ctrl, {"op": "started", "pid": pid})
    os._exit(0)


if __name__ == "__main__":
    main()
