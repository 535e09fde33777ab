"""Hidden cases: tests a candidate never saw, derived from a task's reference solution.

One module, one job: hidden cases from inputs to verdict. Reading the visible calls,
mutating them, answering them with the reference and keeping only cheap, agreed ones are
steps of one derivation whose caps bound each other.

A hard-coded table passes the visible tests and fails on inputs that are not
in it; a weak test (``assert not f(1, 0) > 0``) is passed by ``float('nan')``,
which fails a test that says what the answer is. So, for a ``python_function``
task with a reference (EvalPlus's idea, applied at training time):

1. **Inputs.** The calls the visible tests make to the entry point with literal
   arguments are read from their source (:func:`visible_inputs`). New inputs are
   derived from them by type-aware mutation (:func:`mutate_inputs`): numbers,
   strings, lists, tuples, dicts, sets and what they nest, and their edge cases,
   each kept within what the visible inputs at that position look like (a
   position whose values are all non-negative stays so; sorted lists stay
   sorted; strings keep their alphabet), so that a mutation rarely leaves the
   task's domain. Seeded by the task's content: the same task gets the same inputs.
2. **Expected values.** The reference runs on every input in the sandbox, twice
   (:data:`DRIVER`). An input is kept when the reference returns, both times,
   the same plain literal (numbers, strings, containers of them), within a CPU
   budget per call; one it raises on, loops on or answers with an object is
   dropped: it is outside the task's domain, or cannot be compared by value.
3. **The cache.** The cases are kept by the task's content hash, in memory and in a
   directory only this uid can read (never one a run can see): each task pays once.

The candidate then meets them in the same confined run as the visible tests
(:func:`arbiter.graders.sandbox.checks.run_plan`), compared on the trusted
side with :func:`same_value`. Nothing of a hidden case (its input, its expected
value) is ever put in a grade's details or feedback: only how many there were
and how many failed.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import math
import os
import random
import re
import stat
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from arbiter.graders.languages import wire
from arbiter.graders.sandbox.syntax import parse_expression, parse_module

__all__ = [
    "DRIVER",
    "GENERATOR_VERSION",
    "HiddenCase",
    "HiddenCaseStore",
    "HiddenCases",
    "derive_hidden_cases",
    "derive_program_cases",
    "derive_wire_cases",
    "hidden_budget",
    "hidden_cache_dir",
    "literal",
    "mutate_inputs",
    "same_reply",
    "same_value",
    "visible_inputs",
    "wire_inputs",
]

#: Bump whenever the kept cases of a task can change: cached cases of another
#: version are derived again. (2: the cases' CPU budget follows the visible calls'.)
GENERATOR_VERSION = "2"
#: Part of a task's key, which seeds its mutation: bump it only to change the
#: inputs every task is tried on (what the seed picks stays put across versions).
SEED_VERSION = "1"

#: Inputs tried on the reference per task; at most this many cases are kept.
TRIED_INPUTS = 64
MAX_CASES = 24
#: A case's call or expected value longer than this (as source text) is dropped.
MAX_CASE_CHARS = 2000
#: CPU the reference may spend on one call, and on all the calls of a kept set.
CALL_CPU_S = 0.25
KEPT_CPU_S = 1.0
#: The kept cases may cost the reference at most this share of what the visible
#: tests' own literal calls cost it, or HIDDEN_CPU_FLOOR_S, whichever is more
#: (see :func:`hidden_budget`).
HIDDEN_CPU_SHARE = 1.0
HIDDEN_CPU_FLOOR_S = 0.005
#: Floats compare within this (relative and absolute) tolerance.
FLOAT_TOLERANCE = 1e-6

Call = tuple[tuple[Any, ...], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class HiddenCase:
    """One hidden case: ``call`` is the source of ``(args, kwargs)``, ``expected`` of the value."""

    call: str
    expected: str


@dataclass(frozen=True, slots=True)
class HiddenCases:
    """A task's hidden cases, and what their derivation saw."""

    entry_point: str
    cases: tuple[HiddenCase, ...]
    #: How many inputs were tried on the reference, and why the others were dropped.
    tried: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    #: Why there are none, when there are none.
    reason: str = ""

    @property
    def digest(self) -> str:
        """A short hash of the cases (a checks worker keeps plans by it)."""
        text = json.dumps([self.entry_point, [[c.call, c.expected] for c in self.cases]])
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def to_json(self) -> dict[str, Any]:
        """The cases as the disk cache keeps them."""
        return {
            "version": GENERATOR_VERSION,
            "entry_point": self.entry_point,
            "cases": [[c.call, c.expected] for c in self.cases],
            "tried": self.tried,
            "dropped": self.dropped,
            "reason": self.reason,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> HiddenCases | None:
        """Read cached cases; None for another generator version or a damaged entry."""
        try:
            if data.get("version") != GENERATOR_VERSION:
                return None
            cases = tuple(HiddenCase(str(c), str(e)) for c, e in data["cases"])
            return cls(
                str(data["entry_point"]),
                cases,
                int(data.get("tried", 0)),
                {str(k): int(v) for k, v in dict(data.get("dropped") or {}).items()},
                str(data.get("reason") or ""),
            )
        except (KeyError, TypeError, ValueError):
            return None


# -- the visible inputs ----------------------------------------------------------------


def literal(text: str) -> Any:
    """``ast.literal_eval`` of source text, parsed under the process's one parse lock."""
    return ast.literal_eval(parse_expression(text.strip()).body)


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NOT


_NOT = object()


def _called_names(tree: ast.Module, entry_point: str) -> set[str]:
    """The entry point, and the parameter a ``check(candidate)`` receives it under."""
    names = {entry_point}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "check" and node.args.args:
            names.add(node.args.args[0].arg)
    return names


def visible_inputs(tests: str | Sequence[str], entry_point: str) -> list[Call]:
    """Return the literal ``(args, kwargs)`` of the visible tests' calls to ``entry_point``.

    Calls whose arguments are not all literals (a variable, a starred list) are
    left out; each distinct input once, in the order the tests make them.
    """
    source = tests if isinstance(tests, str) else "\n".join(tests)
    try:
        tree = parse_module(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return []
    names = _called_names(tree, entry_point)
    seen: dict[str, Call] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if node.func.id not in names or any(isinstance(a, ast.Starred) for a in node.args):
            continue
        args = tuple(_literal(a) for a in node.args)
        if any(k.arg is None for k in node.keywords):
            continue
        kwargs = {str(k.arg): _literal(k.value) for k in node.keywords}
        if any(v is _NOT for v in (*args, *kwargs.values())):
            continue
        seen.setdefault(repr((args, kwargs)), (args, kwargs))
    return list(seen.values())


def entry_point_of(tests: str | Sequence[str], reference: str) -> str | None:
    """The function the tests call that the reference defines, when exactly one is."""
    source = tests if isinstance(tests, str) else "\n".join(tests)
    try:
        tree = parse_module(source)
        defined = {
            n.name
            for n in parse_module(reference).body
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        }
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    called = {
        n.func.id
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in defined
    }
    return called.pop() if len(called) == 1 else None


# -- mutation --------------------------------------------------------------------------


def _plain(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` is plain literal data this module knows how to mutate and compare."""
    if depth > 8:
        return False
    kind = type(value)
    if kind in (bool, int, str, bytes) or value is None:
        return True
    if kind is float:
        return math.isfinite(value)
    if kind in (list, tuple, set, frozenset):
        return all(_plain(v, depth + 1) for v in value)
    if kind is dict:
        return all(_plain(k, depth + 1) and _plain(v, depth + 1) for k, v in value.items())
    return False


def _decimals(value: float) -> int:
    text = repr(value)
    if "e" in text or "." not in text:
        return 0
    return len(text.split(".")[1])


class _Mutator:
    """Type-aware mutation of one value, within what its peers (the values seen beside it) show."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def value(self, value: Any, peers: list[Any]) -> Any:
        kind = type(value)
        same = [p for p in peers if type(p) is kind] or [value]
        if kind is bool:
            return not value
        if kind is int:
            return self.integer(value, same)
        if kind is float:
            return self.real(value, same)
        if kind is str:
            return self.text(value, same)
        if kind is bytes:
            return self.text(value.decode("latin-1"), [p.decode("latin-1") for p in same]).encode(
                "latin-1"
            )
        if kind is tuple:
            return self.record(value, same)
        if kind in (list, set, frozenset):
            return self.sequence(value, same)
        if kind is dict:
            return self.mapping(value, same)
        return value

    def integer(self, value: int, peers: list[int]) -> int:
        lo, hi = min(peers), max(peers)
        reach = max(abs(lo), abs(hi), 3)
        choice = self.rng.randrange(8)
        new = [
            value + 1,
            value - 1,
            value + self.rng.randint(-reach, reach),
            self.rng.randint(lo, hi) if hi > lo else value + self.rng.choice((-2, 2)),
            value * 2,
            value // 2,
            lo,
            hi,
        ][choice]
        if lo >= 0:
            new = max(new, 1 if lo >= 1 else 0)
        bound = 2 * reach + 10
        return max(-bound, min(bound, new))

    def real(self, value: float, peers: list[float]) -> float:
        lo, hi = min(peers), max(peers)
        reach = max(abs(lo), abs(hi), 1.0)
        places = max(_decimals(p) for p in peers)
        new = [
            value + self.rng.uniform(-reach, reach) / 2,
            value * self.rng.uniform(0.5, 1.5),
            self.rng.uniform(lo, hi) if hi > lo else value + 1.0,
            -value,
        ][self.rng.randrange(4)]
        if lo >= 0:
            new = abs(new)
        return round(new, min(places, 6)) if places else float(round(new))

    def text(self, value: str, peers: list[str]) -> str:
        words = sorted({w for p in peers for w in p.split(" ") if w})
        if len(words) > 1 and any(" " in p for p in peers) and self.rng.random() < 0.5:
            # Words from a vocabulary ("three one five"): mutate at the word level.
            spaced = [p.split(" ") for p in peers]
            mutated = self.sequence(value.split(" "), [[w for w in p if w] for p in spaced])
            return " ".join(mutated)
        alphabet = sorted(set("".join(peers))) or list("abc")
        lengths = [len(p) for p in peers]
        low, high = min(lengths), max(max(lengths) * 2, 4)
        chars = list(value)
        for _ in range(8):
            op = self.rng.randrange(6)
            out = list(chars)
            at = self.rng.randrange(len(out) + 1)
            if op == 0:
                out.insert(at, self.rng.choice(alphabet))
            elif op == 1 and out:
                del out[min(at, len(out) - 1)]
            elif op == 2 and out:
                out[min(at, len(out) - 1)] = self.rng.choice(alphabet)
            elif op == 3 and len(out) > 1:
                i, j = self.rng.sample(range(len(out)), 2)
                out[i], out[j] = out[j], out[i]
            elif op == 4 and out:
                i = self.rng.randrange(len(out))
                j = self.rng.randrange(i, len(out)) + 1
                out[j:j] = out[i:j]
            else:
                out.reverse()
            if low <= len(out) <= high:
                return "".join(out)
        return "".join(chars)

    def record(self, value: tuple[Any, ...], peers: list[tuple[Any, ...]]) -> tuple[Any, ...]:
        """A tuple is a record: same length, one field mutated against that field's peers."""
        if not value:
            return value
        at = self.rng.randrange(len(value))
        field_peers = [p[at] for p in peers if len(p) == len(value)]
        out = list(value)
        out[at] = self.value(value[at], field_peers)
        return tuple(out)

    def sequence(self, value: Any, peers: list[Any]) -> Any:
        kind = type(value)
        items = list(value)
        elements = [e for p in peers for e in p] or items
        lengths = [len(p) for p in peers]
        low, high = min(lengths), max(max(lengths) * 2, 4)
        # Sorted or distinct only as the task's inputs, not one input, show it.
        evidence = sum(len(p) > 1 for p in peers) >= 2
        ordered = kind is list and evidence and _all_sorted(peers)
        unique = kind is not list or (evidence and _all_unique(peers))
        for _ in range(8):
            out = list(items)
            op = self.rng.randrange(6)
            if op == 0 and out:
                i = self.rng.randrange(len(out))
                out[i] = self.value(out[i], elements)
            elif op == 1 and out:
                del out[self.rng.randrange(len(out))]
            elif op == 2 and elements:
                seed = self.rng.choice(elements)
                out.insert(self.rng.randrange(len(out) + 1), self.value(seed, elements))
            elif op == 3 and len(out) > 1:
                self.rng.shuffle(out)
            elif op == 4 and out and not unique:
                out.insert(self.rng.randrange(len(out) + 1), self.rng.choice(out))
            elif op == 5 and elements:
                for _ in range(self.rng.randint(1, 3)):
                    out.append(self.value(self.rng.choice(elements), elements))
            else:
                continue
            if unique:
                out = _deduplicated(out)
            if ordered:
                try:
                    out.sort()
                except TypeError:
                    continue
            if low <= len(out) <= high:
                return out if kind is list else kind(out)
        return value

    def mapping(self, value: dict[Any, Any], peers: list[dict[Any, Any]]) -> dict[Any, Any]:
        keys = [k for p in peers for k in p] or list(value)
        values = [v for p in peers for v in p.values()] or list(value.values())
        sizes = [len(p) for p in peers]
        out = dict(value)
        op = self.rng.randrange(3)
        if op == 0 and out:
            key = self.rng.choice(list(out))
            out[key] = self.value(out[key], values)
        elif op == 1 and len(out) > min(sizes):
            del out[self.rng.choice(list(out))]
        elif keys and values:
            key = self.value(self.rng.choice(keys), keys)
            out[key] = self.value(self.rng.choice(values), values)
        return out


def _all_sorted(peers: list[Any]) -> bool:
    long = [p for p in peers if len(p) > 1]
    try:
        return bool(long) and all(list(p) == sorted(p) for p in long)
    except TypeError:
        return False


def _all_unique(peers: list[Any]) -> bool:
    try:
        return all(len(set(p)) == len(p) for p in peers)
    except TypeError:
        return False


def _deduplicated(items: list[Any]) -> list[Any]:
    out: list[Any] = []
    seen: list[Any] = []
    for item in items:
        if item not in seen:
            seen.append(item)
            out.append(item)
    return out


def mutate_inputs(inputs: Sequence[Call], count: int, seed: str) -> list[Call]:
    """Return up to ``count`` new inputs derived from ``inputs`` (none of them among them).

    Each comes from one visible input with one argument mutated (or, one time in
    four, every argument), against that argument's peers: the values the other
    visible inputs of the same shape give at that position.
    """
    usable = [c for c in inputs if _plain(c[0]) and _plain(c[1])]
    if not usable:
        return []
    rng = random.Random(seed)
    mutator = _Mutator(rng)
    taken = {repr(c) for c in inputs}
    out: list[Call] = []
    for _ in range(count * 8):
        if len(out) >= count:
            break
        args, kwargs = rng.choice(usable)
        shape = [c for c in usable if len(c[0]) == len(args) and c[1].keys() == kwargs.keys()]
        positions: list[int | str] = [*range(len(args)), *kwargs]
        if not positions:
            break
        chosen = positions if rng.random() < 0.25 else [rng.choice(positions)]
        new_args, new_kwargs = list(args), dict(kwargs)
        try:
            for at in chosen:
                if isinstance(at, int):
                    new_args[at] = mutator.value(args[at], [c[0][at] for c in shape])
                else:
                    new_kwargs[at] = mutator.value(kwargs[at], [c[1][at] for c in shape])
        except (ValueError, TypeError, OverflowError, RecursionError):
            continue
        call = (tuple(new_args), new_kwargs)
        text = repr(call)
        if text in taken or len(text) > MAX_CASE_CHARS:
            continue
        taken.add(text)
        out.append(call)
    return out


# -- the reference, in the sandbox ---------------------------------------------------------

#: Appended to the reference's code and run as ``__main__`` in the sandbox: reads
#: the entry point's name and the calls from stdin, makes each call under a CPU
#: timer with the reference's own output silenced, and writes one line per call
#: (flushed, so that a run that dies still says what it got to).
DRIVER = r"""

def __arbiter_drive():
    import ast, io, signal, sys, time

    class Slow(BaseException):
        pass

    def on_timer(signum, frame):
        raise Slow()

    def plain(value, depth=0):
        kind = type(value)
        if depth > 8:
            return False
        if value is None or kind in (bool, int, str, bytes):
            return True
        if kind is float:
            return value == value and value not in (float("inf"), float("-inf"))
        if kind in (list, tuple, set, frozenset):
            return all(plain(v, depth + 1) for v in value)
        if kind is dict:
            return all(plain(k, depth + 1) and plain(v, depth + 1) for k, v in value.items())
        return False

    entry, per_call, total = ast.literal_eval(sys.stdin.readline())
    function = globals()[entry]
    out = sys.stdout
    signal.signal(signal.SIGPROF, on_timer)
    spent = 0.0
    for line in sys.stdin:
        index, args, kwargs = ast.literal_eval(line)
        if spent > total:
            status, text = "budget", ""
        else:
            sys.stdout = io.StringIO()
            started = time.process_time()
            status, text = "ok", ""
            signal.setitimer(signal.ITIMER_PROF, per_call)
            try:
                value = function(*args, **kwargs)
            except Slow:
                status = "slow"
            except BaseException as e:
                status = "raised:" + type(e).__name__
            finally:
                signal.setitimer(signal.ITIMER_PROF, 0)
                sys.stdout = out
            used = time.process_time() - started
            spent += used
            if status == "ok":
                try:
                    text = repr(value)
                    if not plain(value) or ast.literal_eval(text) != value:
                        status, text = "not_literal", ""
                except BaseException:
                    status, text = "not_literal", ""
        out.write(repr((index, status, round(used if status != "budget" else 0.0, 6), text)))
        out.write("\n")
        out.flush()


__arbiter_drive()
"""

#: What runs the driver: ``(code, stdin) -> (exit code or None, stdout)``; raises
#: ``SandboxError`` on a fault of ours.
RunScript = Callable[[str, bytes], tuple[int | None, bytes]]

_LINE = re.compile(rb"^\(.*\)$")


def _reference_outputs(
    run: RunScript, reference: str, entry_point: str, calls: Sequence[Call]
) -> dict[int, tuple[str, float, str]]:
    """Run the reference on ``calls``: ``index -> (status, cpu_s, repr)`` for each it reached.

    A run that dies mid-way (a segfault of a C extension, the run's own limits)
    is resumed after the call it died on, which is recorded as ``crashed``.
    """
    results: dict[int, tuple[str, float, str]] = {}
    pending = list(range(len(calls)))
    for _ in range(4):
        if not pending:
            break
        head = repr((entry_point, CALL_CPU_S, KEPT_CPU_S * 4)) + "\n"
        body = "".join(repr((i, calls[i][0], calls[i][1])) + "\n" for i in pending)
        _, stdout = run(reference + DRIVER, (head + body).encode())
        for raw in stdout.splitlines():
            if not _LINE.match(raw):
                continue
            try:
                index, status, used, text = literal(raw.decode("utf-8", "replace"))
            except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
                continue
            if isinstance(index, int) and index in pending and index not in results:
                results[index] = (str(status), float(used), str(text))
        left = [i for i in pending if i not in results]
        if left:  # the run ended on this call: the rest go to a fresh run
            results[left[0]] = ("crashed", 0.0, "")
        pending = left[1:]
    for i in pending:
        results[i] = ("crashed", 0.0, "")
    return results


def hidden_budget(visible_cpu_s: float) -> float:
    """The CPU a task's kept hidden cases may cost its reference, all together.

    ``visible_cpu_s`` is what the visible tests' literal calls cost it in the same
    run. The cases are run on every sample of the task: at most as much again as
    the tests' own calls (``HIDDEN_CPU_SHARE``), so that a candidate fast enough
    for the visible tests is not timed out by inputs it never saw, and a
    grading's cost stays within a known multiple of the task's own. A task whose
    calls cost next to nothing gets ``HIDDEN_CPU_FLOOR_S`` (about what a grading
    costs anyway: a run, its checks and their round trips); none gets more than
    ``KEPT_CPU_S``. The shares are CPU times measured in one process, so a
    faster or busier machine keeps the same cases, but for an input whose cost
    sits on the budget's edge.
    """
    return min(KEPT_CPU_S, max(HIDDEN_CPU_FLOOR_S, HIDDEN_CPU_SHARE * visible_cpu_s))


def derive_hidden_cases(
    run: RunScript,
    *,
    tests: str | Sequence[str],
    reference: str,
    entry_point: str,
    seed: str,
    max_cases: int = MAX_CASES,
) -> HiddenCases:
    """Derive a task's hidden cases by running its reference on mutated visible inputs.

    Raises:
        SandboxError: a run failed for a reason of ours (the caller retries; nothing is cached).
    """
    visible = visible_inputs(tests, entry_point)
    if not visible:
        return HiddenCases(entry_point, (), reason="the tests call the entry point on no literal")
    calls = mutate_inputs(visible, TRIED_INPUTS, seed)
    if not calls:
        return HiddenCases(entry_point, (), reason="no input could be derived from the tests")
    # The visible inputs first: what they cost the reference sets the cases' budget.
    answered = _reference_outputs(run, reference, entry_point, [*visible, *calls])
    budget = hidden_budget(sum(answered[i][1] for i in range(len(visible)) if i in answered))
    first = {i - len(visible): got for i, got in answered.items() if i >= len(visible)}
    dropped: dict[str, int] = {}
    kept: list[int] = []
    spent = 0.0
    full = False
    for i in range(len(calls)):
        status, used, text = first.get(i, ("crashed", 0.0, ""))
        if status != "ok":
            why = status.split(":")[0]
            dropped[why] = dropped.get(why, 0) + 1
        elif len(text) > MAX_CASE_CHARS:
            dropped["too_large"] = dropped.get("too_large", 0) + 1
        elif used > budget:
            # One input costs more than the whole set may: far outside the visible
            # tests' size, and the candidate's time is not to be spent on it.
            dropped["slow"] = dropped.get("slow", 0) + 1
        elif full or spent + used > budget or len(kept) >= max_cases:
            # The first that does not fit ends the set: skipping it for cheaper ones
            # after it would favour the inputs a function answers early.
            full = True
            dropped["over_budget"] = dropped.get("over_budget", 0) + 1
        else:
            kept.append(i)
            spent += used
    # Once more, in a fresh process: an answer that changes (randomness, a set's
    # order under another hash seed) is no answer to hold a candidate to.
    second = _reference_outputs(run, reference, entry_point, [calls[i] for i in kept])
    cases = []
    for at, i in enumerate(kept):
        again = second.get(at)
        if again is None or again[0] != "ok" or again[2] != first[i][2]:
            dropped["nondeterministic"] = dropped.get("nondeterministic", 0) + 1
            continue
        cases.append(HiddenCase(repr(calls[i]), first[i][2]))
    reason = "" if cases else "the reference answered no derived input with a plain value"
    return HiddenCases(entry_point, tuple(cases), len(calls), dropped, reason)


# -- programs: inputs from the task's own generator ---------------------------------------

#: Appended to a task's ``input_generator`` and run in the sandbox: writes
#: ``count`` inputs as a JSON list, each from ``generate(random.Random(seed:i))``.
GENERATOR_DRIVER = r"""

def __arbiter_generate():
    import json, random, sys

    seed, count = json.loads(sys.stdin.readline())
    out = []
    for i in range(count):
        value = generate(random.Random(f"{seed}:{i}"))
        if not isinstance(value, str):
            raise TypeError("generate(rng) must return the program's input as a str")
        out.append(value)
    sys.stdout.write(json.dumps(out))


__arbiter_generate()
"""

#: Hidden cases of a stdin/stdout task: each is a run of its own.
MAX_PROGRAM_CASES = 6
#: A generated input, or the reference's output on it, longer than this is dropped.
MAX_PROGRAM_BYTES = 64 << 10


def derive_program_cases(
    run: RunScript,
    *,
    generator: str,
    reference: str,
    seed: str,
    max_cases: int = MAX_PROGRAM_CASES,
) -> HiddenCases:
    """Hidden cases of a stdin/stdout task: its generator's inputs, its reference's outputs.

    Each case's ``call`` is the input text and ``expected`` the reference's
    stdout. An input the reference fails on (a non-zero exit, its limits) or
    answers differently the second time is dropped.

    Raises:
        SandboxError: a run failed for a reason of ours (nothing is cached).
    """
    tried = max_cases * 2
    code, stdout = run(generator + GENERATOR_DRIVER, (json.dumps([seed, tried]) + "\n").encode())
    try:
        inputs = json.loads(stdout.decode("utf-8")) if code == 0 else None
    except (ValueError, UnicodeDecodeError):
        inputs = None
    if not isinstance(inputs, list) or not all(isinstance(i, str) for i in inputs):
        return HiddenCases("", (), reason="the task's input generator made no list of inputs")
    dropped: dict[str, int] = {}
    cases: list[HiddenCase] = []
    seen: set[str] = set()
    for text in inputs:
        if len(cases) >= max_cases:
            break
        if text in seen or len(text.encode()) > MAX_PROGRAM_BYTES:
            dropped["repeated_or_large"] = dropped.get("repeated_or_large", 0) + 1
            continue
        seen.add(text)
        first = run(reference, text.encode())
        if first[0] != 0 or len(first[1]) > MAX_PROGRAM_BYTES:
            dropped["reference_failed"] = dropped.get("reference_failed", 0) + 1
            continue
        if run(reference, text.encode()) != first:
            dropped["nondeterministic"] = dropped.get("nondeterministic", 0) + 1
            continue
        cases.append(HiddenCase(text, first[1].decode("utf-8", "replace")))
    reason = "" if cases else "the reference answered none of the generated inputs"
    return HiddenCases("", tuple(cases), len(inputs), dropped, reason)


# -- compiled programs: the values their bridge carries ------------------------------------

#: A program's answers to requests: the reply payload to each, ``None`` from the
#: first it did not answer on (its run ended).
AskProgram = Callable[[Sequence[bytes]], list[bytes | None]]
#: Runs of the reference a derivation may make (each ends early where it stops answering).
MAX_PROGRAM_RUNS = 4


def _from_wire(value: Any) -> Any:
    """A decoded wire value as the mutator's plain data (a wire tuple as a tuple)."""
    if isinstance(value, wire.Tuple):
        return tuple(_from_wire(v) for v in value.items)
    if isinstance(value, list):
        return [_from_wire(v) for v in value]
    if isinstance(value, dict):
        return {_from_wire(k): _from_wire(v) for k, v in value.items()}
    return value


def _to_wire(value: Any) -> Any:
    if isinstance(value, tuple):
        return wire.Tuple(tuple(_to_wire(v) for v in value))
    if isinstance(value, list):
        return [_to_wire(v) for v in value]
    if isinstance(value, dict):
        return {_to_wire(k): _to_wire(v) for k, v in value.items()}
    return value


def wire_inputs(
    exchanges: Sequence[tuple[bytes, bytes]], entry_point: str | None
) -> tuple[str | None, list[Call]]:
    """The function the harness called (``entry_point``, or the one called most) and its inputs.

    Read from the requests a harness made of the reference (their values as
    the bridge carried them, whatever the language wrote them as in its tests).
    A call whose arguments are not plain data (a character) is left out.
    """
    calls: dict[str, list[Call]] = {}
    for request, _ in exchanges:
        try:
            name, args = wire.decode(request)
        except (wire.WireError, TypeError, ValueError):
            continue
        if not isinstance(name, str) or not isinstance(args, list):
            continue
        plain = tuple(_from_wire(a) for a in args)
        if _plain(plain):
            calls.setdefault(name, []).append((plain, {}))
    if entry_point is None or entry_point not in calls:
        entry_point = max(calls, key=lambda n: len(calls[n]), default=None)
    if entry_point is None:
        return None, []
    unique: dict[str, Call] = {}
    for call in calls[entry_point]:
        unique.setdefault(repr(call), call)
    return entry_point, list(unique.values())


def derive_wire_cases(
    ask: AskProgram,
    exchanges: Sequence[tuple[bytes, bytes]],
    *,
    entry_point: str | None,
    seed: str,
    max_cases: int = MAX_CASES,
) -> HiddenCases:
    """Derive a compiled task's hidden cases from its reference's run against the tests.

    ``exchanges`` are the calls the task's harness made of the reference, and
    its replies; ``ask`` runs the reference's program and makes requests of it
    directly. Mutated inputs are asked of the reference; one it answers with a
    value (not an error), the same in a second run that makes the harness's
    calls first (as the candidate's run does), is kept: the request and
    the reply, as the bridge carries them (:mod:`arbiter.graders.languages.wire`).
    An input the reference dies or stalls on is dropped, and the next run goes
    on after it.

    Raises:
        SandboxError: a run failed for a reason of ours (the caller retries; nothing is cached).
    """
    name, visible = wire_inputs(exchanges, entry_point)
    if name is None or not visible:
        return HiddenCases(entry_point or "", (), reason="the tests made no call of plain values")
    calls = mutate_inputs(visible, TRIED_INPUTS, seed)
    requests = [wire.encode([name, [_to_wire(a) for a in args]]) for args, _ in calls]
    if not requests:
        return HiddenCases(name, (), reason="no input could be derived from the tests")
    dropped: dict[str, int] = {}

    def drop(why: str) -> None:
        dropped[why] = dropped.get(why, 0) + 1

    first: list[bytes | None] = []
    runs = 0
    while len(first) < len(requests):
        if runs == MAX_PROGRAM_RUNS:
            first += [None] * (len(requests) - len(first))
            break
        runs += 1
        replies = ask(requests[len(first) :])
        answered = [r for r in replies if r is not None]
        first += answered
        if len(first) < len(requests):
            first.append(None)  # the one it ended on
    kept: list[int] = []
    for i, reply in enumerate(first):
        if reply is None:
            drop("ended")
        elif not reply.startswith(b"r"):
            drop("raised")
        elif len(reply) > MAX_CASE_CHARS or len(requests[i]) > MAX_CASE_CHARS:
            drop("too_large")
        elif len(kept) >= max_cases:
            drop("over_budget")
        else:
            kept.append(i)
    # Once more, in a fresh run that first makes the harness's own calls, as the
    # candidate's run will: an answer that depends on what the process did before
    # (a read past a vector's end on an input outside the task's domain) is no
    # answer to hold a candidate to.
    before = [request for request, _ in exchanges]
    second = ask([*before, *(requests[i] for i in kept)])[len(before) :] if kept else []
    cases = []
    for at, i in enumerate(kept):
        reply = first[i]
        if reply is None or at >= len(second) or second[at] != reply:
            drop("nondeterministic")
            continue
        cases.append(HiddenCase(requests[i].decode("latin-1"), reply.decode("latin-1")))
    reason = "" if cases else "the reference answered no derived input with a value"
    return HiddenCases(name, tuple(cases), len(requests), dropped, reason)


def same_reply(got: bytes | None, want: bytes, tolerance: float = FLOAT_TOLERANCE) -> bool:
    """Whether a program's reply (``r`` and a wire value) answers the reference's.

    Byte for byte, or by :func:`same_value` on the decoded values (floats within
    ``tolerance``); an error reply, no reply or bytes that do not decode never do.
    """
    if got is None or not got.startswith(b"r"):
        return False
    if got == want:
        return True
    try:
        mine, theirs = wire.decode(got[1:]), wire.decode(want[1:])
    except (wire.WireError, TypeError, ValueError, RecursionError):
        return False
    return same_value(_from_wire(mine), _from_wire(theirs), tolerance)


# -- comparing on the trusted side -------------------------------------------------------------


def same_value(got: Any, want: Any, tolerance: float = FLOAT_TOLERANCE) -> bool:
    """Whether the candidate's (decoded) value answers the expected one.

    As ``==`` would say, except that a float on either side compares within
    ``tolerance``, also inside lists, tuples and dicts; a list never answers a
    tuple, as with ``==``.
    """
    kind = type(want)
    if kind is float or (type(got) is float and kind is int):
        if type(got) not in (int, float) or type(want) not in (int, float):
            return False
        return math.isclose(got, want, rel_tol=tolerance, abs_tol=tolerance)
    if kind in (list, tuple):
        return (
            type(got) is kind
            and len(got) == len(want)
            and all(same_value(a, b, tolerance) for a, b in zip(got, want, strict=True))
        )
    if kind is dict:
        return (
            type(got) is dict
            and got.keys() == want.keys()
            and all(same_value(got[k], want[k], tolerance) for k in want)
        )
    return bool(got == want)


# -- the cache ----------------------------------------------------------------------------------


def hidden_cache_dir() -> str:
    """The directory of cached hidden cases: ours alone, and no run's to see.

    ``ARBITER_HIDDEN_CACHE_DIR`` when set, else ``/var/tmp/arbiter-hidden-<uid>``:
    never beneath the toolchain cache, which every run may read. Mode 0700.
    """
    root = os.environ.get("ARBITER_HIDDEN_CACHE_DIR") or f"/var/tmp/arbiter-hidden-{os.geteuid()}"
    os.makedirs(root, 0o700, exist_ok=True)
    st = os.stat(root)
    if st.st_uid != os.geteuid():
        raise PermissionError(f"the hidden-case cache {root} must belong to uid {os.geteuid()}")
    if stat.S_IMODE(st.st_mode) & 0o077:
        os.chmod(root, 0o700)
    return root


class HiddenCaseStore:
    """Hidden cases by task content hash: in memory, on disk, derived once (single-flight)."""

    def __init__(self, directory: str | None = None, keep: int = 4096) -> None:
        self._directory = directory
        self._keep = keep
        self._memory: OrderedDict[str, HiddenCases] = OrderedDict()
        self._lock = threading.Lock()
        self._making: dict[str, threading.Lock] = {}
        #: How many lookups were answered from memory, from disk, and by deriving.
        self.hits = {"memory": 0, "disk": 0, "derived": 0}

    @staticmethod
    def key(*parts: object) -> str:
        """The content hash of what a task's cases are made of."""
        return hashlib.sha256(repr((SEED_VERSION, *parts)).encode()).hexdigest()

    def _path(self, key: str) -> str | None:
        try:
            directory = self._directory or hidden_cache_dir()
        except OSError:
            return None  # no disk cache here: memory alone
        return os.path.join(directory, f"{key}.json")

    def get(self, key: str, make: Callable[[], HiddenCases]) -> HiddenCases:
        """The cases of ``key``, made by ``make`` once if neither memory nor disk holds them."""
        with self._lock:
            found = self._remember(key)
            if found is not None:
                self.hits["memory"] += 1
                return found
            making = self._making.setdefault(key, threading.Lock())
        with making:  # one derivation per task, however many samples of it wait
            with self._lock:
                found = self._remember(key)
                if found is not None:
                    self.hits["memory"] += 1
                    return found
            path = self._path(key)
            cases = self._read(path)
            if cases is not None:
                self.hits["disk"] += 1
            else:
                cases = make()
                self.hits["derived"] += 1
                self._write(path, cases)
            with self._lock:
                self._memory[key] = cases
                while len(self._memory) > self._keep:
                    self._memory.popitem(last=False)
                self._making.pop(key, None)
            return cases

    def _remember(self, key: str) -> HiddenCases | None:
        found = self._memory.get(key)
        if found is not None:
            self._memory.move_to_end(key)
        return found

    @staticmethod
    def _read(path: str | None) -> HiddenCases | None:
        if path is None:
            return None
        try:
            with open(path, encoding="utf-8") as f:
                return HiddenCases.from_json(json.load(f))
        except (OSError, ValueError):
            return None

    @staticmethod
    def _write(path: str | None, cases: HiddenCases) -> None:
        if path is None:
            return
        temporary = f"{path}.{os.getpid()}.{threading.get_ident()}"
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(cases.to_json(), f)
            os.replace(temporary, path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
