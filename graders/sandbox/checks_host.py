"""The trusted side of function tasks, out of the service: a set of checks worker processes.

One module, one job: the checks workers as the service sees them. Starting, warming,
lending and replacing workers share one pool state and one lock.

Each worker (:mod:`arbiter.graders.sandbox.checks_server`) is a clean interpreter that
grades one candidate at a time: it gets the run's channel and its deadline's
shared memory as descriptors, runs the task's tests against the candidate,
and streams each unit's outcome back. The service never runs a test
statement itself, so nothing a candidate returns can take the service's memory
or hold its interpreter lock, and one sample's trusted work is bounded on its
own: in memory by the worker's address-space limit, in CPU by the worker's
timer, and, for a worker stuck in C code past its share, by this side, which
reads the worker's CPU time (``/proc/PID/schedstat``) while it waits and kills
it. A killed worker's units so far keep their outcomes; the rest are the
candidate's (its values made the tests' work run past their bound).

A worker is taken before the candidate's run starts (a worker's start is
ours, never the run's), and given back after; a worker that died, was
killed, or grew large is replaced by a fresh one.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import queue
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from arbiter.graders.credit import ours
from arbiter.graders.sandbox._frames import (
    CONTROL_MAX_BYTES,
    ChannelClosed,
    FrameReader,
    recv_frame,
    recv_frame_with_fds,
    send_frame,
)
from arbiter.graders.sandbox.checks import UnitOutcome
from arbiter.graders.sandbox.checks_server import MAX_PLANS as PLANS_KEPT
from arbiter.graders.sandbox.clock import RunDeadline
from arbiter.graders.sandbox.errors import SandboxError
from arbiter.graders.sandbox.lanes import RANK_EVERY_S, cpu_time_s
from arbiter.graders.sandbox.pool import REPORT_GRACE_S, boot_of, log_tail, spawn_boot

__all__ = ["ChecksHost", "ChecksReport", "TrustedLimits"]

#: A worker's start is ours, never a run's: a cold start under eight busy processes on
#: two cores took past 60 s (bench.determinism --levels 4), like a zygote's.
_START_TIMEOUT_S = 120.0
#: How long past the run's deadline a worker may take to send its last frame.
GRACE_S = REPORT_GRACE_S / 5
#: CPU past its share a worker may spend before it is killed (its own timer fires first).
CPU_GRACE_S = 1.0
logger = logging.getLogger("arbiter.graders.sandbox.checks_host")

_BOOT = boot_of("checks_server")
_TEMPLATE_BOOT = boot_of("checks_server", "forks")


@dataclass(frozen=True, slots=True)
class TrustedLimits:
    """What one grading's trusted side may spend: CPU seconds, and memory."""

    cpu_s: float = 20.0
    memory_mb: int = 2048


@dataclass(frozen=True, slots=True)
class ChecksReport:
    """What a worker concluded (a verdict: no candidate code ran there)."""

    outcomes: list[UnitOutcome]
    #: How many units the plan has (None when it did not plan).
    units: int | None = None
    #: ``(reason, message)`` when the candidate's module did not load or the channel broke first.
    load_error: tuple[str, str] | None = None
    #: The task's own tests or helpers failed, the candidate untouched.
    plan_error: str | None = None
    broken: str | None = None
    broken_detail: str = ""
    events: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    pipelined: int = 0
    #: ``cpu`` or ``memory`` when the tests' own work ran past its bound; ``deadline``
    #: when the worker was still working after the run's deadline.
    trusted_limit: str | None = None


class _Held:
    """A process of ours with a control socket and a scratch directory."""

    proc: subprocess.Popen[bytes] | _Forked
    ctrl: socket.socket
    scratch: str
    #: Where its stderr goes, in its scratch directory.
    log: str

    def first_frame(self, who: str) -> dict[str, Any]:
        """Read what it says on start; stop it, and say why with its log, if nothing comes."""
        try:
            ready = recv_frame(
                self.ctrl, max_bytes=CONTROL_MAX_BYTES, deadline=time.monotonic() + _START_TIMEOUT_S
            )
        except (OSError, EOFError, ValueError) as e:
            said = self.log_tail()
            self.stop()
            raise SandboxError(f"{who} did not start: {e}" + (f": {said}" if said else "")) from e
        if type(ready) is not dict:
            self.stop()
            raise SandboxError(f"{who} said {ready!r} on start")
        return ready

    def log_tail(self) -> str:
        return log_tail(self.log)

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        self.proc.wait()
        self.ctrl.close()
        shutil.rmtree(self.scratch, ignore_errors=True)


class _NoForks(Exception):
    """This host cannot hold a forked worker by a pidfd (Linux before 5.3)."""


class _Template(_Held):
    """The process workers are forked from (:func:`checks_server.forks`), and our end of it."""

    def __init__(self) -> None:
        self.scratch = tempfile.mkdtemp(prefix="arbiter-checks-")
        self.log = os.path.join(self.scratch, "template.log")
        self.proc, self.ctrl = spawn_boot(
            _TEMPLATE_BOOT,
            pythonpath=os.environ.get("PYTHONPATH", ""),
            home=self.scratch,
            cwd=self.scratch,
            log_path=self.log,
        )
        who = "the checks workers' template"
        ready = self.first_frame(who)
        if ready.get("op") == "unable":
            self.stop()
            raise _NoForks(str(ready.get("detail")))
        if ready.get("op") != "ready":
            self.stop()
            raise SandboxError(f"{who} said {ready!r} on start")

    def fork(self, scratch: str) -> tuple[_Forked, socket.socket]:
        """Fork a worker at home in ``scratch``; return it and our end of its control socket."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            try:
                send_frame(self.ctrl, {"op": "fork", "scratch": scratch}, [theirs.fileno()])
            finally:
                theirs.close()
            self.ctrl.settimeout(_START_TIMEOUT_S)
            try:
                answer, fds = recv_frame_with_fds(self.ctrl, max_bytes=CONTROL_MAX_BYTES)
            finally:
                self.ctrl.settimeout(None)
        except (OSError, EOFError, ValueError) as e:
            ours.close()
            raise SandboxError(f"the checks workers' template is gone: {e}") from e
        if answer.get("op") != "forked" or type(answer.get("pid")) is not int or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            ours.close()
            raise SandboxError(f"the checks workers' template answered {answer!r}")
        return _Forked(answer["pid"], fds[0]), ours


class _Forked:
    """A worker the template forked, held by a pidfd: never confused with a reused pid.

    It is the template's child, so this side cannot wait for its status; its
    pidfd turns readable once it has exited, which is all ``poll`` needs.
    """

    def __init__(self, pid: int, pidfd: int) -> None:
        self.pid = pid
        self._fd = pidfd
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self._fd], [], [], 0)[0]:
            self.returncode = -1  # exited; its status went to the template
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            signal.pidfd_send_signal(self._fd, signal.SIGKILL)

    def wait(self) -> int:
        """Wait for the worker to have exited (it was killed), and let go of its pidfd."""
        if self._fd >= 0:
            select.select([self._fd], [], [], _START_TIMEOUT_S)
            os.close(self._fd)
            self._fd = -1
        self.returncode = -1  # its status went to the template
        return self.returncode


class _Worker(_Held):
    """One worker process and our end of its control socket."""

    def __init__(self, template: _Template | None = None) -> None:
        self.scratch = tempfile.mkdtemp(prefix="arbiter-checks-")
        self.log = os.path.join(self.scratch, "worker.log")
        if template is not None:
            try:
                self.proc, self.ctrl = template.fork(self.scratch)
            except BaseException:
                shutil.rmtree(self.scratch, ignore_errors=True)
                raise
        else:
            self.proc, self.ctrl = spawn_boot(
                _BOOT,
                pythonpath=os.environ.get("PYTHONPATH", ""),
                home=self.scratch,
                cwd=self.scratch,
                log_path=self.log,
            )
        self.reader = FrameReader(self.ctrl, max_bytes=CONTROL_MAX_BYTES)
        self.ready = False
        #: The task keys this worker has planned, newest last (as its own cache keeps them).
        self.planned: OrderedDict[str, None] = OrderedDict()

    def remember(self, key: str) -> None:
        """Note that this worker holds the plan of ``key`` now."""
        self.planned[key] = None
        self.planned.move_to_end(key)
        while len(self.planned) > PLANS_KEPT:
            self.planned.popitem(last=False)

    def wait_ready(self) -> None:
        ready = self.first_frame("a checks worker")
        if ready.get("op") != "ready":
            self.stop()
            raise SandboxError(f"a checks worker said {ready!r} on start")
        self.ready = True

    def send(
        self,
        request: dict[str, Any],
        channel: socket.socket,
        deadline: RunDeadline,
        limits: TrustedLimits,
    ) -> float:
        """Hand the worker one grading; return its CPU time before it (see :meth:`collect`)."""
        start_cpu = cpu_time_s(self.proc.pid)
        message = {**request, "cpu_s": limits.cpu_s, "memory_mb": limits.memory_mb}
        try:
            send_frame(self.ctrl, message, [channel.fileno(), deadline.fd()])
        except OSError as e:
            raise SandboxError(f"a checks worker could not be reached: {e}") from e
        return start_cpu

    def collect(
        self, start_cpu: float, deadline: RunDeadline, limits: TrustedLimits
    ) -> tuple[ChecksReport, bool]:
        """Wait for the grading sent; return its report and whether this worker may grade again."""
        outcomes: list[UnitOutcome] = []
        while True:
            deadline.refresh()
            left = deadline.at() + GRACE_S - time.monotonic()
            if left <= 0:
                return self._killed(outcomes, "deadline"), False
            if cpu_time_s(self.proc.pid) - start_cpu > limits.cpu_s + CPU_GRACE_S:
                return self._killed(outcomes, "cpu"), False
            if (
                not self.reader.buffered
                and not select.select([self.ctrl], [], [], min(left, RANK_EVERY_S))[0]
            ):
                continue
            try:
                frame = self.reader.recv(deadline=time.monotonic() + _START_TIMEOUT_S)
            except (ChannelClosed, OSError) as e:
                if cpu_time_s(self.proc.pid) - start_cpu > limits.cpu_s:
                    return self._killed(outcomes, "cpu"), False
                said = self.log_tail()
                raise SandboxError(
                    f"a checks worker died: {e}" + (f": {said[-500:]}" if said else "")
                ) from e
            except ValueError as e:
                raise SandboxError(f"a checks worker sent a malformed frame: {e}") from e
            if type(frame) is not dict:
                raise SandboxError("a checks worker sent a malformed frame")
            if frame.get("op") == "units":
                outcomes.extend(_outcomes(frame["units"]))
                continue
            if frame.get("op") != "done" or "refused" in frame:
                raise SandboxError(f"a checks worker answered {frame!r}")
            outcomes.extend(_outcomes(frame.get("units_left") or []))
            return _report(frame, outcomes), not frame.get("recycle")

    def _killed(self, outcomes: list[UnitOutcome], why: str) -> ChecksReport:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGKILL)
        return ChecksReport(outcomes, trusted_limit=why)


def _outcomes(units: list[dict[str, Any]]) -> list[UnitOutcome]:
    """The units' outcomes a worker sent (its own code's data: trusted)."""
    return [
        UnitOutcome(int(u["line"]), str(u["source"]), u["outcome"], str(u.get("error") or ""))
        for u in units
    ]


def _report(frame: dict[str, Any], outcomes: list[UnitOutcome]) -> ChecksReport:
    load = frame.get("load_error")
    return ChecksReport(
        outcomes,
        units=frame.get("units"),
        load_error=(str(load[0]), str(load[1])) if load else None,
        plan_error=frame.get("plan_error"),
        broken=frame.get("broken"),
        broken_detail=str(frame.get("broken_detail") or ""),
        events=[str(e) for e in frame.get("events") or []],
        flags=[str(f) for f in frame.get("flags") or []],
        pipelined=int(frame.get("pipelined") or 0),
        trusted_limit=frame.get("trusted_limit"),
    )


class ChecksHost:
    """Up to ``workers`` checks worker processes, started ahead and on demand; thread-safe."""

    def __init__(self, workers: int) -> None:
        self.max_workers = max(1, workers)
        self._idle: queue.LifoQueue[_Worker] = queue.LifoQueue()
        self._count = 0
        #: What workers are forked from (``None``: not started yet, or ``forks`` is off).
        self._template: _Template | None = None
        #: Whether workers are forked from a template (else each is an interpreter of its own).
        self.forks = True
        self._lock = threading.Lock()
        self._all: set[_Worker] = set()
        self._closed = False
        atexit.register(self.close)

    def start(self, workers: int | None = None) -> None:
        """Have ``workers`` (default: all) started and idle; their start-up is ours."""
        wanted = self.max_workers if workers is None else min(workers, self.max_workers)
        started = []
        with self._lock:
            while self._count < wanted:
                started.append(self._spawn())
        for worker in started:
            try:
                worker.wait_ready()
            except SandboxError:
                self._forget(worker)
                raise
            self._idle.put(worker)

    def _spawn(self) -> _Worker:
        """Start a worker (under ``_lock``): a fork of the template, else an interpreter."""
        try:
            worker = _Worker(self._forking())
        except SandboxError:
            # The template died since it was last seen alive: one fresh start.
            self._drop_template()
            worker = _Worker(self._forking())
        self._count += 1
        self._all.add(worker)
        return worker

    def _forking(self) -> _Template | None:
        """The template, started (again) if it is not running; ``None`` where forks are off."""
        if self._template is not None and not self._template.alive:
            self._drop_template()
        if self._template is None and self.forks and not self._closed:
            try:
                self._template = _Template()
            except _NoForks as e:
                logger.warning("checks workers start as interpreters of their own: %s", e)
                self.forks = False
        return self._template

    def _drop_template(self) -> None:
        if self._template is not None:
            self._template.stop()
            self._template = None

    def _forget(self, worker: _Worker) -> None:
        worker.stop()
        with self._lock:
            self._count -= 1
            self._all.discard(worker)

    @contextlib.contextmanager
    def worker(self, timeout_s: float = 60.0, key: str | None = None) -> Iterator[_Checks]:
        """Take a worker for one grading (before the run starts), and give it back after.

        With the task's ``key``, an idle worker that has planned the task already is
        taken first: a task is planned once per worker, and a GRPO group's responses
        then cost the tests' run alone.
        """
        with ours():  # waiting for a worker, or for one to start, is ours
            worker = self._take(timeout_s, key)
        checks = _Checks(worker)
        try:
            yield checks
        finally:
            checks.abandon()
            if checks.reusable and worker.alive and not self._closed:
                self._idle.put(worker)
            else:
                self._forget(worker)

    def _idle_worker(self, key: str | None) -> _Worker | None:
        """An idle worker, one that planned ``key`` if any did, else the last given back."""
        with self._idle.mutex:
            idle = self._idle.queue
            if not idle:
                return None
            at = len(idle) - 1
            if key is not None:
                at = next((i for i in range(at, -1, -1) if key in idle[i].planned), at)
            worker = idle[at]
            del idle[at]
            self._idle.not_full.notify()
            return worker

    def _take(self, timeout_s: float, key: str | None = None) -> _Worker:
        while True:
            worker = self._idle_worker(key)
            if worker is None:
                with self._lock:
                    fresh = self._spawn() if self._count < self.max_workers else None
                if fresh is not None:
                    try:
                        fresh.wait_ready()
                    except SandboxError:
                        self._forget(fresh)
                        raise
                    return fresh
                try:
                    worker = self._idle.get(timeout=timeout_s)
                except queue.Empty:
                    raise SandboxError(f"no checks worker free within {timeout_s:g} s") from None
            if worker.alive:
                return worker
            self._forget(worker)

    def close(self) -> None:
        """Stop every worker."""
        self._closed = True
        with self._lock:
            workers = list(self._all)
            self._all.clear()
            self._count = 0
        for worker in workers:
            worker.stop()
        with self._lock:
            self._drop_template()
        while True:
            try:
                self._idle.get_nowait()
            except queue.Empty:
                break


class _Checks:
    """A worker taken for one grading."""

    def __init__(self, worker: _Worker) -> None:
        self._worker = worker
        self.reusable = True
        #: The grading handed to the worker and not yet collected.
        self._sent: tuple[str, float, RunDeadline, TrustedLimits] | None = None

    def start(
        self,
        request: dict[str, Any],
        channel: socket.socket,
        deadline: RunDeadline,
        limits: TrustedLimits,
    ) -> None:
        """Hand the worker the task and the run's channel, before the run's child starts.

        The worker decodes the request and finds (or makes) the task's plan while
        the child is forked and loads the candidate's module; the first thing it
        does on the channel is read the child's load report, so it never speaks
        before the run has its code. Collect the report with :meth:`result`.

        Raises:
            SandboxError: the worker could not be reached (ours; the grading is retried).
        """
        if self._sent is not None:
            raise RuntimeError("a checks worker grades one run at a time")
        try:
            start_cpu = self._worker.send(request, channel, deadline, limits)
        except SandboxError:
            self.reusable = False
            raise
        self._sent = (str(request["task"]["key"]), start_cpu, deadline, limits)

    def result(self) -> ChecksReport:
        """Wait for the report of the grading :meth:`start` handed over.

        Raises:
            SandboxError: the worker failed (ours; the grading is retried).
        """
        if self._sent is None:
            raise RuntimeError("no grading was handed to this checks worker")
        key, start_cpu, deadline, limits = self._sent
        self._sent = None
        try:
            report, self.reusable = self._worker.collect(start_cpu, deadline, limits)
        except SandboxError:
            self.reusable = False
            raise
        self._worker.remember(key)
        return report

    def abandon(self) -> None:
        """Give up a grading started and never collected: the worker is mid-grading, not reused."""
        if self._sent is not None:
            self._sent = None
            self.reusable = False
