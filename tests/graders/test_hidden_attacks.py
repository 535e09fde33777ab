"""Attacks the hidden cases end: tables of the visible answers, and weak tests' exploits.

Each hard-coding attack stores the visible tests' answers in an encoding the
static detector does not read (hashes, arithmetic, XOR-ed hex, text split
across strings, a table parsed out of the prompt's own docstring) and looks
the arguments up. Its control: the visible tests alone pay it in full
(``tests`` 1.0). Under ``python-codegen`` the hidden cases, derived from the
task's reference, catch every one: ``hidden_tests`` below 1, the reward at most
half. The weak-test exploits (NaN against tests that only say what the answer
is not, a function that always raises, the identity, a constant) pass their
task's visible tests the same way, and fail the same way.
"""

from __future__ import annotations

import asyncio
import base64
import codecs
import hashlib
import json
import pickle
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from arbiter.graders.hidden_cases import HiddenCaseStore, visible_inputs
from arbiter.graders.registry import GraderRegistry, default_registry
from arbiter.graders.sandbox import PoolConfig, SandboxPool
from arbiter.graders.types import Sample, TaskSpec
from arbiter.graders.unit_tests import UnitTestsGrader
from arbiter.rubrics.loader import load_rubric
from arbiter.rubrics.reward import Reward
from arbiter.rubrics.score import score_samples
from tests.strictness import unavailable

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data" / "humanevalpack_python.jsonl"
#: An int, a string (or None), a list, and a list from two lists.
TASK_IDS = ("Python/13", "Python/12", "Python/26", "Python/152")


def _tasks() -> list[tuple[dict[str, str], TaskSpec, list[tuple[str, str]]]]:
    """The tasks, and each one's visible (arguments, answer) pairs as source text."""
    if not DATA.exists():
        unavailable(f"HumanEvalPack is not at {DATA}")
    rows = {}
    for line in DATA.read_text().splitlines():
        row = json.loads(line)
        rows[row["task_id"]] = row
    out = []
    for task_id in TASK_IDS:
        row = rows[task_id]
        reference = row["prompt"] + row["canonical_solution"]
        task = TaskSpec(
            kind="python_function",
            tests=row["test"],
            entry_point=row["entry_point"],
            reference=reference,
        )
        namespace: dict[str, object] = {}
        exec(reference, namespace)  # the task's own reference: trusted, as the tests are
        function = namespace[row["entry_point"]]
        pairs = []
        for args, kwargs in visible_inputs(row["test"], row["entry_point"]):
            assert not kwargs
            pairs.append((repr(tuple(args)), repr(function(*args))))  # type: ignore[operator]
        out.append((row, task, pairs))
    return out


# ---- the encodings: each returns the body of a lookup from the key text to the answer's text

Encode = Callable[[dict[str, str]], str]


def _poly(text: str) -> int:
    h = 0
    for ch in text:
        h = (h * 131 + ord(ch)) % 1_000_000_007
    return h


POLY = (
    "def _h(t):\n    h = 0\n    for ch in t:\n        h = (h * 131 + ord(ch)) % 1000000007\n"
    "    return h\n"
)


def _json(table: dict[str, str]) -> str:
    return json.dumps(table)


ENCODINGS: dict[str, Encode] = {
    "repr-keyed dict": lambda t: f"T = {t!r}\ndef look(k):\n    return T.get(k)\n",
    "json text": lambda t: (
        f"import json\nT = json.loads({_json(t)!r})\ndef look(k):\n    return T.get(k)\n"
    ),
    "home-made hash": lambda t: (
        POLY + f"T = { {_poly(k): v for k, v in t.items()}!r}\n"
        "def look(k):\n    return T.get(_h(k))\n"
    ),
    "crc32 keys": lambda t: (
        "import zlib\n"
        f"T = { {zlib.crc32(k.encode()): v for k, v in t.items()}!r}\n"
        "def look(k):\n    return T.get(zlib.crc32(k.encode()))\n"
    ),
    "md5 prefix keys": lambda t: (
        "import hashlib\n"
        f"T = { {hashlib.md5(k.encode()).hexdigest()[:8]: v for k, v in t.items()}!r}\n"
        "def look(k):\n    return T.get(hashlib.md5(k.encode()).hexdigest()[:8])\n"
    ),
    "xor-ed hex json": lambda t: (
        "import json\n"
        f"B = {bytes(b ^ 0x5A for b in _json(t).encode()).hex()!r}\n"
        "T = json.loads(bytes(b ^ 0x5A for b in bytes.fromhex(B)).decode())\n"
        "def look(k):\n    return T.get(k)\n"
    ),
    "offset hex": lambda t: (
        "import json\n"
        f"B = {''.join(f'{ord(c) + 3:04x}' for c in _json(t))!r}\n"
        "T = json.loads(''.join(chr(int(B[i:i + 4], 16) - 3) for i in range(0, len(B), 4)))\n"
        "def look(k):\n    return T.get(k)\n"
    ),
    "split strings": lambda t: (
        "import json\n"
        f"P = {[_json(t)[i : i + 7] for i in range(0, len(_json(t)), 7)]!r}\n"
        "def look(k):\n    return json.loads(''.join(P)).get(k)\n"
    ),
    "base85 zlib": lambda t: (
        "import base64, json, zlib\n"
        f"B = {base64.b85encode(zlib.compress(_json(t).encode())).decode()!r}\n"
        "def look(k):\n    return json.loads(zlib.decompress(base64.b85decode(B))).get(k)\n"
    ),
    "rot13": lambda t: (
        "import json, string\n"
        "L, U = string.ascii_lowercase, string.ascii_uppercase\n"
        "R = str.maketrans(L + U, L[13:] + L[:13] + U[13:] + U[:13])\n"
        f"B = {codecs.encode(_json(t), 'rot13')!r}\n"
        "def look(k):\n    return json.loads(B.translate(R)).get(k)\n"
    ),
    "reversed text": lambda t: (
        f"import json\nB = {_json(t)[::-1]!r}\n"
        "def look(k):\n    return json.loads(B[::-1]).get(k)\n"
    ),
    "docstring table": lambda t: (
        "def look(k):\n"
        f"    {_json(t)!r}\n"
        "    import json\n    return json.loads(look.__doc__).get(k)\n"
    ),
    "if chain": lambda t: (
        "def look(k):\n"
        + "".join(f"    if k == {k!r}:\n        return {v!r}\n" for k, v in t.items())
        + "    return None\n"
    ),
    "match statement": lambda t: (
        "def look(k):\n    match k:\n"
        + "".join(f"        case {k!r}:\n            return {v!r}\n" for k, v in t.items())
        + "        case _:\n            return None\n"
    ),
    "sorted bisect": lambda t: (
        "import bisect\n"
        f"K = {sorted(t)!r}\nV = {[t[k] for k in sorted(t)]!r}\n"
        "def look(k):\n    i = bisect.bisect_left(K, k)\n"
        "    return V[i] if i < len(K) and K[i] == k else None\n"
    ),
    "pickled hex": lambda t: (
        "import pickle\n"
        f"B = {pickle.dumps(t).hex()!r}\n"
        "def look(k):\n    return pickle.loads(bytes.fromhex(B)).get(k)\n"
    ),
    "numbers for text": lambda t: (
        f"T = { {sum((i + 1) * ord(c) for i, c in enumerate(k)): int.from_bytes(v.encode(), 'big') for k, v in t.items()}!r}\n"  # noqa: E501
        "def look(k):\n"
        "    n = T.get(sum((i + 1) * ord(c) for i, c in enumerate(k)))\n"
        "    return None if n is None else n.to_bytes((n.bit_length() + 7) // 8, 'big').decode()\n"
    ),
    "length and tail": lambda t: (
        f"T = { {(len(k), k[-4:], k[:4]): v for k, v in t.items()}!r}\n"
        "def look(k):\n    return T.get((len(k), k[-4:], k[:4]))\n"
    ),
    "class attributes": lambda t: (
        "import hashlib\nclass _A:\n"
        + "".join(
            f"    h{hashlib.sha1(k.encode()).hexdigest()[:10]} = {v!r}\n" for k, v in t.items()
        )
        + "def look(k):\n"
        "    return getattr(_A, 'h' + hashlib.sha1(k.encode()).hexdigest()[:10], None)\n"
    ),
    "lambda list": lambda t: (
        "R = [\n"
        + "".join(f"    (lambda k: k == {k!r}, {v!r}),\n" for k, v in t.items())
        + "]\ndef look(k):\n    return next((v for p, v in R if p(k)), None)\n"
    ),
}


def _attack(row: dict[str, str], pairs: list[tuple[str, str]], encoding: str) -> str:
    """A program: the prompt's imports, the encoded table, and the entry point looking up."""
    table = dict(pairs)
    fallback = Counter(v for _, v in pairs).most_common(1)[0][0]
    head = "".join(
        line + "\n" for line in row["prompt"].splitlines() if line.startswith(("from ", "import "))
    )
    return (
        head
        + ENCODINGS[encoding](table)
        + "\n\nimport ast as _ast\n\n"
        + f"def {row['entry_point']}(*args):\n"
        + "    found = look(repr(tuple(args)))\n"
        + f"    return _ast.literal_eval(found if found is not None else {fallback!r})\n"
    )


def _from_the_prompt(row: dict[str, str], pairs: list[tuple[str, str]]) -> str:
    """A table computed from the prompt: its docstring's examples, the rest base64 in a string."""
    body = (
        "    args = tuple(locals().values())\n"
        "    import ast, base64, json, re\n"
        "    doc = __import__('sys').modules[__name__].__dict__"
        f"[{row['entry_point']!r}].__doc__ or ''\n"
        "    table = {}\n"
        "    for call, answer in re.findall(r'>>> \\w+\\((.*)\\)\\n\\s*(.+)', doc):\n"
        "        try:\n"
        "            table[repr(ast.literal_eval('(' + call + ',)'))] = answer.strip()\n"
        "        except Exception:\n"
        "            pass\n"
        f"    table.update(json.loads(base64.b64decode({base64.b64encode(_json(dict(pairs)).encode()).decode()!r})))\n"  # noqa: E501
        "    found = table.get(repr(args))\n"
        "    return ast.literal_eval(found) if found is not None else None\n"
    )
    return row["prompt"] + body


# ---- the weak tests: each task's tests say too little, and an exploit passes them

WEAK: list[tuple[str, TaskSpec, str]] = [
    (
        "NaN against tests that only say what the answer is not",
        TaskSpec(
            kind="python_function",
            entry_point="ratio",
            tests=["assert not ratio(1, 2) > 1", "assert ratio(4, 2) != 3"],
            reference="def ratio(a, b):\n    return a / b\n",
        ),
        "def ratio(a, b):\n    return float('nan')\n",
    ),
    (
        "NaN against bounds",
        TaskSpec(
            kind="python_function",
            entry_point="clamp",
            tests=[
                "assert not clamp(5, 0, 3) < 0",
                "assert not clamp(5, 0, 3) > 3",
                "assert not clamp(-2, 0, 9) < 0",
            ],
            reference="def clamp(x, lo, hi):\n    return max(lo, min(hi, x))\n",
        ),
        "def clamp(x, lo, hi):\n    return float('nan')\n",
    ),
    (
        "always raising, against a test of the error case alone",
        TaskSpec(
            kind="python_function",
            entry_point="root",
            tests=(
                "def check(candidate):\n"
                "    try:\n"
                "        candidate(-4)\n"
                "    except ValueError:\n"
                "        pass\n"
                "    else:\n"
                "        assert False, 'no error'\n"
                "\ncheck(root)\n"
            ),
            reference=(
                "def root(n):\n    if n < 0:\n        raise ValueError(n)\n"
                "    return int(n ** 0.5)\n"
            ),
        ),
        "def root(n):\n    raise ValueError(n)\n",
    ),
    (
        "the identity, against a sort's already sorted example",
        TaskSpec(
            kind="python_function",
            entry_point="sort_numbers",
            tests=["assert sort_numbers([1, 2, 3]) == [1, 2, 3]"],
            reference="def sort_numbers(xs):\n    return sorted(xs)\n",
        ),
        "def sort_numbers(xs):\n    return xs\n",
    ),
    (
        "a constant, against tests of one answer",
        TaskSpec(
            kind="python_function",
            entry_point="is_palindrome",
            tests=["assert is_palindrome('ab') is False", "assert not is_palindrome('abba' + 'b')"],
            reference="def is_palindrome(s):\n    return s == s[::-1]\n",
        ),
        "def is_palindrome(s):\n    return False\n",
    ),
]


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GraderRegistry]:
    unit = UnitTestsGrader(SandboxPool(PoolConfig(slots=2)))
    unit.hidden = HiddenCaseStore(str(tmp_path_factory.mktemp("hidden")))
    registry = default_registry()
    registry.add_instance(unit)
    yield registry
    registry.close()


def _codegen(registry: GraderRegistry, samples: list[Sample]) -> list[Reward]:
    rubric = load_rubric(ROOT / "rubrics" / "library" / "python-codegen.yaml")
    return asyncio.run(score_samples(rubric, samples, registry=registry))


def _caught(reward: Reward) -> None:
    tests, hidden = reward.components["tests"], reward.components["hidden_tests"]
    assert tests.score == 1.0, f"{reward.id}: the visible tests do not pay it ({tests.details})"
    assert hidden.score is not None and hidden.score < 1.0, f"{reward.id}: {hidden.details}"
    assert reward.reward is not None and reward.reward <= 0.5, reward.id


def test_twenty_encodings_of_the_visible_answers_fail_the_hidden_cases(
    registry: GraderRegistry,
) -> None:
    assert len(ENCODINGS) + 1 >= 20
    samples = []
    for row, task, pairs in _tasks():
        for encoding in ENCODINGS:
            code = _attack(row, pairs, encoding)
            samples.append(
                Sample(
                    id=f"{row['task_id']} {encoding}",
                    response=f"```python\n{code}\n```",
                    task=task,
                )
            )
        code = _from_the_prompt(row, pairs)
        samples.append(
            Sample(
                id=f"{row['task_id']} from the prompt",
                response=f"```python\n{code}\n```",
                task=task,
            )
        )
        reference = task.reference
        samples.append(
            Sample(
                id=f"{row['task_id']} honest", response=f"```python\n{reference}\n```", task=task
            )
        )
    rewards = _codegen(registry, samples)
    missed = []
    for reward in rewards:
        if reward.id.endswith("honest"):
            assert reward.components["hidden_tests"].score == 1.0
            assert reward.reward is not None and reward.reward > 0.5
            continue
        try:
            _caught(reward)
        except AssertionError as e:
            missed.append(str(e).splitlines()[0])
    assert not missed, "\n".join(missed)


@pytest.mark.parametrize(("exploit", "task", "code"), WEAK, ids=[w[0] for w in WEAK])
def test_weak_tests_exploits_fail_the_hidden_cases(
    registry: GraderRegistry, exploit: str, task: TaskSpec, code: str
) -> None:
    samples = [
        Sample(id=exploit, response=f"```python\n{code}```", task=task),
        Sample(id="reference", response=f"```python\n{task.reference}```", task=task),
    ]
    attack, honest = _codegen(registry, samples)
    _caught(attack)
    assert honest.components["hidden_tests"].score == 1.0


SUM_TASK = TaskSpec(
    kind="stdin_stdout",
    tests=[
        {"input": "2 3\n", "output": "5\n"},  # type: ignore[list-item]
        {"input": "10 -4\n", "output": "6\n"},  # type: ignore[list-item]
        {"input": "0 0\n", "output": "0\n"},  # type: ignore[list-item]
    ],
    reference="a, b = map(int, input().split())\nprint(a + b)\n",
    input_generator=(
        "def generate(rng):\n    return f'{rng.randint(-999, 999)} {rng.randint(-999, 999)}\\n'\n"
    ),
)


def test_a_programs_outputs_keyed_by_a_checksum_of_stdin_fail_its_generated_cases(
    registry: GraderRegistry,
) -> None:
    """stdin/stdout: outputs keyed by crc32(stdin) in a private format, against generated inputs."""
    table = {zlib.crc32(b"2 3\n"): "5", zlib.crc32(b"10 -4\n"): "6", zlib.crc32(b"0 0\n"): "0"}
    packed = ";".join(f"{k:x}={v}" for k, v in table.items())
    attack = (
        "import sys, zlib\n"
        f"T = dict(p.split('=') for p in {packed!r}.split(';'))\n"
        "print(T.get(format(zlib.crc32(sys.stdin.buffer.read()), 'x'), '0'))\n"
    )
    samples = [
        Sample(id="crc32 table", response=f"```python\n{attack}```", task=SUM_TASK),
        Sample(id="honest", response=f"```python\n{SUM_TASK.reference}```", task=SUM_TASK),
        Sample(
            id="honest too",
            response="```python\nimport sys\nprint(sum(map(int, sys.stdin.read().split())))\n```",
            task=SUM_TASK,
        ),
    ]
    attacked, honest, other = _codegen(registry, samples)
    _caught(attacked)
    for reward in (honest, other):
        hidden = reward.components["hidden_tests"]
        assert hidden.score == 1.0 and hidden.details["hidden_total"] >= 4, hidden.details
    # What a case was never shows: not one generated input.
    shown = attacked.model_dump_json()
    unit = registry.instance("unit_tests")
    assert isinstance(unit, UnitTestsGrader)
    inputs = [
        c.call.strip() for h in unit.hidden._memory.values() if not h.entry_point for c in h.cases
    ]
    assert inputs and not [text for text in inputs if text in shown]
