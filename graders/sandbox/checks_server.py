"""A trusted worker process: runs a function task's tests against one candidate at a time.

Started by :mod:`arbiter.graders.sandbox.checks_host` as a clean interpreter (an
empty environment, never a fork of the service, which holds secrets), or forked
from one (:func:`forks`: a template that has imported what a worker needs and
never grades, so a new worker costs a fork, not an interpreter's start), it
never runs candidate code: it plans the task's tests (cached by the task's
key), reads the candidate's load report on the run's channel, and runs the
plan (:func:`arbiter.graders.sandbox.checks.run_plan`), every call going to the
confined child over that channel, every value coming back as data.

Why a process of its own rather than a thread of the service: the tests' own
work on what the candidate returns is bounded here and nowhere else. A test
that lists a ``range(10**9)`` the candidate returned, or builds a set of
25,000 integers that hash alike, spends this process's memory (its address
space is capped per grading, so it meets a MemoryError) and this process's CPU
(a profiling timer raises :class:`~arbiter.graders.sandbox.checks.TrustedLimit`
once the grading's share is spent; the host kills a worker stuck in C code past
it). Neither the service nor another sample's run ever waits on it.

The protocol on the control socket, one grading at a time: a request (the
task, the limits) with two descriptors, the run's channel and its deadline's
shared memory; then one ``unit`` frame per unit as it ends, and a ``done``
frame with what the channel saw.
"""

from __future__ import annotations

import contextlib
import gc
import os
import resource
import signal
import socket
import sys
import time
import traceback
import warnings
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

from arbiter.graders.hidden_cases import literal, same_value
from arbiter.graders.sandbox import _linux as kernel
from arbiter.graders.sandbox._frames import CONTROL_MAX_BYTES, recv_frame_with_fds, send_frame
from arbiter.graders.sandbox.checks import (
    CheckPlan,
    CheckPlanError,
    HiddenRun,
    TrustedLimit,
    UnitOutcome,
    plan_function_tests,
    run_plan,
)
from arbiter.graders.sandbox.clock import DeadlineView
from arbiter.graders.sandbox.proxy import WARNING_ORIGIN, Channel, ChannelBroken

#: Plans kept, by task key (a GRPO group grades many responses against one task).
MAX_PLANS = 512
#: A worker whose peak memory passed this leaves after its grading (a fresh one replaces it).
RECYCLE_RSS_MB = 1024
#: Outcomes go to the host together, at most this long after the first of them is
#: known, and the rest with ``done``: a frame (and two signal-mask calls) per
#: assertion cost a HumanEval grading more than its tests. They are streamed at
#: all for a worker the host must kill, whose finished units still count.
UNITS_EVERY_S = 0.05

_PLANS: OrderedDict[str, CheckPlan | str] = OrderedDict()


def peak_rss_mb() -> int:
    """This process image's peak resident memory, in MiB (``VmHWM``).

    Not ``getrusage``'s ``ru_maxrss``: across ``exec`` that keeps the peak of the
    process that started us, so a worker started by a service holding a model
    would read as large from its first grading and be replaced after every one.
    """
    with open("/proc/self/status", "rb") as status:
        for line in status:
            if line.startswith(b"VmHWM:"):
                return int(line.split()[1]) >> 10
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10


def _plan(task: dict[str, Any]) -> CheckPlan:
    """Plan the task's tests once per key; a task whose tests do not plan stays refused."""
    key = str(task["key"])
    found = _PLANS.get(key)
    if found is None:
        try:
            tests = task["tests"]
            found = plan_function_tests(
                tests if isinstance(tests, str) else [str(t) for t in tests],
                task.get("setup_code"),
                helpers=task.get("helpers"),
                entry_point=task.get("entry_point"),
                reference=task.get("reference"),
                classes=task.get("classes"),
            )
        except CheckPlanError as e:
            found = str(e)
        _PLANS[key] = found
        while len(_PLANS) > MAX_PLANS:
            _PLANS.popitem(last=False)
    else:
        _PLANS.move_to_end(key)
    if isinstance(found, str):
        raise CheckPlanError(found)
    return found


_HIDDEN: OrderedDict[str, HiddenRun] = OrderedDict()


def _hidden(task: dict[str, Any]) -> HiddenRun | None:
    """The task's hidden cases, decoded once per key (our own literals: trusted data)."""
    cases = task.get("hidden")
    if not cases:
        return None
    key = str(task["key"])
    found = _HIDDEN.get(key)
    if found is None:
        decoded = []
        for call, expected in cases:
            args, kwargs = literal(call)
            decoded.append((tuple(args), dict(kwargs), literal(expected)))
        found = HiddenRun(str(task["hidden_entry_point"]), tuple(decoded), same_value)
        _HIDDEN[key] = found
        while len(_HIDDEN) > MAX_PLANS:
            _HIDDEN.popitem(last=False)
    else:
        _HIDDEN.move_to_end(key)
    return found


def _shown_unless_the_candidates(show: Any) -> Any:
    """Wrap ``warnings.showwarning``: the candidate's warnings are never written out.

    A warning the candidate emits is emitted again here for the tests
    (``warnings.catch_warnings(record=True)`` records it as in one process);
    one that no test records would go to this worker's log, which outlives
    every grading: a candidate warning thousands of times per call would fill
    the host's disk. The filters stay as they are; only the display goes.
    """

    def showwarning(
        message: Any, category: Any, filename: str, lineno: int, *args: Any, **kwargs: Any
    ) -> None:
        if filename != WARNING_ORIGIN:
            show(message, category, filename, lineno, *args, **kwargs)

    return showwarning


def _on_timer(signum: int, frame: Any) -> None:
    raise TrustedLimit("the tests' own work ran past the CPU time it is given")


def _send(ctrl: socket.socket, message: dict[str, Any]) -> None:
    """Send a frame whole: the CPU timer must not cut one in half."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGPROF})
    try:
        send_frame(ctrl, message)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _unit(outcome: UnitOutcome) -> dict[str, Any]:
    return {
        "line": outcome.line,
        "source": outcome.source,
        "outcome": outcome.outcome,
        "error": outcome.error,
    }


def grade(request: dict[str, Any], chan_fd: int, deadline_fd: int, ctrl: socket.socket) -> None:
    """Run one grading and send its frames; the run's channel is closed afterwards."""
    memory = int(request["memory_mb"]) << 20
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    infinite = hard == resource.RLIM_INFINITY
    resource.setrlimit(resource.RLIMIT_AS, (memory if infinite else min(memory, hard), hard))
    view = DeadlineView(deadline_fd)
    channel = Channel(socket.socket(fileno=chan_fd), view, max_bytes=int(request["max_bytes"]))
    done: dict[str, Any] = {"op": "done"}
    pending: list[dict[str, Any]] = []
    task = request["task"]
    # What a task's tests change in this process (``warnings.simplefilter("error")``,
    # the recursion limit) must not outlive its grading: the next is another task's.
    filters = warnings.catch_warnings()
    filters.__enter__()
    recursion = sys.getrecursionlimit()
    signal.setitimer(signal.ITIMER_PROF, float(request["cpu_s"]))
    try:
        plan = _plan(task)
        done["units"] = plan.units
        load = channel.load()
        if not load.ok:
            done["load_error"] = ["load_error", f"{load.error_type}: {load.error_message}"]
        else:
            sent = 0
            since = 0.0

            def tell(outcome: UnitOutcome) -> None:
                nonlocal sent, since
                if not pending:
                    since = time.monotonic()
                pending.append(_unit(outcome))
                sent += 1
                if time.monotonic() - since >= UNITS_EVERY_S:
                    _send(ctrl, {"op": "units", "units": pending})
                    pending.clear()

            results = run_plan(
                plan,
                channel,
                load,
                task.get("entry_point"),
                on_outcome=tell,
                hidden=_hidden(task),
            )
            for outcome in results[sent:]:  # a failed setup's outcomes come all at once
                tell(outcome)
    except TrustedLimit:
        done["trusted_limit"] = "cpu"
    except CheckPlanError as e:
        done["plan_error"] = str(e)[:2000]
    except ChannelBroken as e:
        done["load_error"] = [e.reason, e.detail[:2000]]
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
        filters.__exit__(None, None, None)
        sys.setrecursionlimit(recursion)
    with contextlib.suppress(OSError):
        channel.check_quiet()
    broken = channel.broken
    done.update(
        units_left=pending,
        broken=broken.reason if broken is not None else None,
        broken_detail=broken.detail[:500] if broken is not None else "",
        events=channel.events[:50],
        flags=channel.flags[:20],
        pipelined=channel.pipelined,
    )
    done["recycle"] = peak_rss_mb() > RECYCLE_RSS_MB
    channel.sock.close()
    view.close()
    _send(ctrl, done)


def main(fd: int | None = None) -> None:
    """Serve gradings on the control socket ``fd`` (default: ``sys.argv[1]``), one at a time."""
    kernel.set_pdeathsig(signal.SIGKILL)
    ctrl = socket.socket(fileno=int(sys.argv[1]) if fd is None else fd)
    # Honest results may be integers of any size, and tests print or parse them;
    # the grading's CPU share bounds the conversions.
    sys.set_int_max_str_digits(0)
    signal.signal(signal.SIGPROF, _on_timer)
    warnings.showwarning = _shown_unless_the_candidates(warnings.showwarning)
    # What the worker holds now is never garbage: a grading's collections skip it.
    gc.collect()
    gc.freeze()
    send_frame(ctrl, {"op": "ready"})
    refusal = {"op": "done", "refused": "a grading needs two descriptors"}
    for request, fds in _requests(ctrl, 2, refusal):
        grade(request, fds[0], fds[1], ctrl)


def forks() -> None:
    """Fork a worker for each request on the control socket whose fd is ``sys.argv[1]``.

    This process has imported what a worker needs and never grades: each child
    is what a fresh interpreter would be once it had imported this module, for
    a fork's cost rather than the imports' (about 0.2 s of CPU a worker). A
    request names the worker's scratch directory (its working directory, HOME,
    TMPDIR and ``worker.log``) and carries its control socket; the answer
    carries a pidfd of the child, so the host never signals a reused pid.
    """
    kernel.set_pdeathsig(signal.SIGKILL)
    ctrl = socket.socket(fileno=int(sys.argv[1]))
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError) as e:
        send_frame(ctrl, {"op": "unable", "detail": f"no pidfd_open: {e}"})
        os._exit(0)
    gc.collect()
    gc.freeze()
    # Children are reaped here; each is kept a zombie until its pidfd is open.
    signal.signal(signal.SIGCHLD, _reap)
    send_frame(ctrl, {"op": "ready"})
    refusal = {"op": "refused", "detail": "a fork needs a scratch and a socket"}
    for request, fds in _requests(ctrl, 1, refusal):
        scratch = request.get("scratch") if type(request) is dict else None
        if type(scratch) is not str:
            _refuse(ctrl, fds, refusal)
            continue
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
        try:
            pid = os.fork()
            if pid == 0:
                _worker_child(ctrl, fds[0], scratch, mask)
            pidfd = os.pidfd_open(pid)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        os.close(fds[0])
        try:
            send_frame(ctrl, {"op": "forked", "pid": pid}, [pidfd])
        finally:
            os.close(pidfd)
    os._exit(0)


def _requests(
    ctrl: socket.socket, descriptors: int, refusal: dict[str, Any]
) -> Iterator[tuple[Any, list[int]]]:
    """Each request on ``ctrl`` until it closes; one without ``descriptors`` fds is refused."""
    while True:
        try:
            request, fds = recv_frame_with_fds(ctrl, max_bytes=CONTROL_MAX_BYTES)
        except EOFError:
            return
        if len(fds) != descriptors:
            _refuse(ctrl, fds, refusal)
            continue
        yield request, fds


def _refuse(ctrl: socket.socket, fds: list[int], answer: dict[str, Any]) -> None:
    """Close what a malformed request brought, and say so."""
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
    send_frame(ctrl, answer)


def _reap(_signum: int, _frame: object) -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def _worker_child(
    template: socket.socket, fd: int, scratch: str, mask: set[int | signal.Signals]
) -> None:
    """Become a worker serving on ``fd``, at home in ``scratch``; never returns."""
    status = 0
    try:
        template.close()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        os.chdir(scratch)
        os.environ["HOME"] = os.environ["TMPDIR"] = scratch
        if "tempfile" in sys.modules:
            # Found again, under the new TMPDIR.
            sys.modules["tempfile"].tempdir = None  # type: ignore[attr-defined]
        log = os.open(
            os.path.join(scratch, "worker.log"),
            os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC,
            0o600,
        )
        os.dup2(log, 2)
        os.close(log)
        main(fd)
    except BaseException:
        status = 70
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    os._exit(status)


if __name__ == "__main__":
    main()
