"""Hardening against a live server: hostile input, hostile rubrics, store faults, kill -9.

Every test here runs a concurrent ``/healthz`` poller beside its traffic: the
service must never answer 5xx, every error must be a JSON ``{code, message}``,
and the event loop must never stall (``/healthz`` within 1 s: a liveness bound
with a wide margin, not a speed target; the measured maximum is printed).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arbiter.store.db import Store
from tests.api.conftest import REPO, Server, StartServer

#: /healthz must answer within this while anything else happens (a stall check).
LIVENESS_S = 1.0
FUZZ = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


#: The poller runs in a process of its own, so that the test's own work (hypothesis,
#: encoding big bodies) never holds its interpreter lock and inflates what it measures.
POLLER = """
import json, sys, threading, time
import httpx
url, stop = sys.argv[1], threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
latencies, failures = [], []
with httpx.Client(timeout=10) as http:
    print("polling", flush=True)
    while not stop.is_set():
        started = time.perf_counter()
        try:
            status = http.get(url + "/healthz").status_code
        except httpx.TransportError as e:
            failures.append(f"{type(e).__name__}: {e}")
            continue
        latencies.append(time.perf_counter() - started)
        if status != 200:
            failures.append(f"status {status}")
        stop.wait(0.02)
print(json.dumps({"latencies": latencies, "failures": failures}), flush=True)
"""


@dataclass
class Poller:
    """What the /healthz poller saw: each answer's latency, and any failure."""

    latencies: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def worst_s(self) -> float:
        return max(self.latencies, default=0.0)


@contextmanager
def healthz_poller(server: Server, label: str) -> Iterator[Poller]:
    poller = Poller()
    process = subprocess.Popen(
        [sys.executable, "-c", POLLER, server.url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdin is not None
    assert process.stdout.readline().strip() == "polling"
    try:
        yield poller
    finally:
        out, _ = process.communicate("", timeout=60)
        seen = json.loads(out.strip().splitlines()[-1])
        poller.latencies, poller.failures = seen["latencies"], seen["failures"]
    worst_ms = poller.worst_s * 1000
    print(f"\n[{label}] /healthz: {len(poller.latencies)} polls, max {worst_ms:.1f} ms")
    assert not poller.failures, poller.failures[:5]
    assert poller.latencies, "the poller never got an answer"
    assert poller.worst_s < LIVENESS_S, f"/healthz stalled for {poller.worst_s:.2f} s"


def assert_json_error_or_ok(response: httpx.Response, context: object) -> None:
    assert response.status_code < 500, (response.status_code, response.text[:500], context)
    if response.status_code >= 400:
        body = response.json()
        assert isinstance(body.get("code"), str) and body["code"], (body, context)
        assert isinstance(body.get("message"), str) and body["message"], (body, context)


# -- hostile request bodies ------------------------------------------------------


class Raw:
    """JSON text spliced in as is (what no encoder of ours would write)."""

    def __init__(self, text: str) -> None:
        self.text = text


def encode(value: Any) -> bytes:
    """Encode JSON where ``Raw`` values go in verbatim and lone surrogates as escapes."""
    raws: list[str] = []

    def swap(v: Any) -> Any:
        if isinstance(v, Raw):
            raws.append(v.text)
            return f"@@RAW{len(raws) - 1}@@"
        if isinstance(v, dict):
            return {k: swap(x) for k, x in v.items()}
        if isinstance(v, list):
            return [swap(x) for x in v]
        return v

    text = json.dumps(swap(value))  # ensure_ascii: a lone surrogate becomes "\udXXX"
    for i, raw in enumerate(raws):
        text = text.replace(f'"@@RAW{i}@@"', raw)
    return text.encode()


HOSTILE = st.one_of(
    st.integers(min_value=2**63, max_value=2**80),
    st.integers(min_value=-(2**80), max_value=-(2**63) - 1),
    st.integers(min_value=4_301, max_value=6_000).map(lambda n: Raw("9" * n)),
    st.integers(min_value=33, max_value=3_000).map(lambda d: Raw("[" * d + "]" * d)),
    st.integers(min_value=33, max_value=600).map(lambda d: Raw('{"a":' * d + "1" + "}" * d)),
    st.sampled_from(["\ud800", "x\udfffy", "\udbff"]),
    st.sampled_from(["id\x00", "\x00", "a\x00b"]),
    st.integers(min_value=513, max_value=4_000).map(lambda n: "g" * n),
    st.sampled_from([Raw("1e400"), Raw("-1e400"), Raw("NaN"), Raw("Infinity")]),
    st.sampled_from([None, True, 1.5, [], {}, ""]),
)
SAMPLE_FIELDS = ["id", "group_id", "prompt", "response", "labels", "metrics", "task", "extra"]
TOP_FIELDS = ["rubric", "rubric_version", "deadline_s", "samples", "extra"]


def valid_sample(i: int) -> dict[str, Any]:
    return {
        "id": f"s{i}",
        "group_id": "g",
        "prompt": "p",
        "response": "r" * 10,
        "metrics": {"turns": i % 5},
    }


@st.composite
def reward_bodies(draw: st.DrawFn) -> tuple[bytes, bool]:
    """A /v1/rewards body, hostile at one place or (about a third of the time) valid."""
    n = draw(st.integers(min_value=1, max_value=4))
    body: dict[str, Any] = {
        "rubric": "efficiency-only",
        "samples": [valid_sample(i) for i in range(n)],
    }
    if draw(st.integers(0, 2)) == 0:
        return encode(body), True
    value = draw(HOSTILE)
    if draw(st.booleans()):
        where = draw(st.sampled_from(SAMPLE_FIELDS))
        sample = body["samples"][draw(st.integers(0, n - 1))]
        if where == "labels":
            sample["labels"] = {"x": value}
        elif where == "metrics":
            sample["metrics"] = {"turns": value}
        else:
            sample[where] = value
    else:
        body[draw(st.sampled_from(TOP_FIELDS))] = value
    return encode(body), False


@st.composite
def openrlhf_bodies(draw: st.DrawFn) -> tuple[bytes, bool]:
    """A /get_reward body, hostile at one place or valid."""
    body: dict[str, Any] = {"query": ["prompt answer"], "prompts": ["prompt "], "labels": ["1"]}
    if draw(st.integers(0, 2)) == 0:
        return encode(body), True
    value = draw(HOSTILE)
    where = draw(st.sampled_from(["query", "prompts", "labels", "label_json", "extra"]))
    if where == "label_json":
        # JSON inside a label string, parsed on the server side.
        inner = draw(st.sampled_from(['{"a":' * 600 + "1" + "}" * 600, '{"task": {"kind": 5}}']))
        body["labels"] = [inner]
    elif where == "extra":
        body["extra"] = value
    else:
        body[where] = [value]
    return encode(body), False


def test_hostile_bodies_get_4xx_json_and_never_stall(server: Server) -> None:
    headers = {"Authorization": f"Bearer {server.keys['trainer']}"}
    statuses: dict[int, int] = {}
    with (
        healthz_poller(server, "request fuzz"),
        httpx.Client(base_url=server.url, headers=headers, timeout=60) as http,
    ):

        @FUZZ
        @given(case=st.one_of(reward_bodies(), openrlhf_bodies()), route=st.booleans())
        def check(case: tuple[bytes, bool], route: bool) -> None:
            raw, valid = case
            # abstain=zero: an abstention is then a reward of 0, not OpenRLHF's 422.
            path = "/v1/rewards" if raw.startswith(b'{"rubric"') else "/get_reward?abstain=zero"
            extra = {"Idempotency-Key": f"fuzz-{hash(raw)}"} if route else {}
            response = http.post(
                path, content=raw, headers={"Content-Type": "application/json", **extra}
            )
            statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
            assert_json_error_or_ok(response, raw[:300])
            if valid:
                assert response.status_code == 200, response.text[:500]
            # The connection survives whatever was sent: the next request is served.
            assert http.get("/healthz").status_code == 200

        check()
    print(f"statuses: {dict(sorted(statuses.items()))}")
    assert any(s >= 400 for s in statuses) and 200 in statuses


def read_response(sock: socket.socket) -> bytes:
    """Read one HTTP/1.1 response with a Content-Length body; b"" if the server closed."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(re.search(rb"(?im)^content-length: *(\d+)", head).group(1))  # type: ignore[union-attr]
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def test_an_idle_connection_outlives_the_clients_own_idle_expiry(server: Server) -> None:
    # A pooled client reuses a connection idle up to its own expiry (httpx: 5 s).
    # A server that closes first races it: a request sent as the server closes is
    # reset (httpx.ReadError mid-load). So the server must keep it open longer.
    client_expiry = httpx.Limits().keepalive_expiry
    assert client_expiry is not None
    host, port = server.url.removeprefix("http://").split(":")
    request = f"GET /healthz HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(request)
        assert read_response(sock).startswith(b"HTTP/1.1 200")
        time.sleep(client_expiry + 1)
        sock.sendall(request)
        again = read_response(sock)
    assert again.startswith(b"HTTP/1.1 200"), f"idle {client_expiry + 1} s, then: {again!r}"


def test_a_reused_idempotency_key_with_another_body_is_refused(server: Server) -> None:
    body = {"rubric": "efficiency-only", "samples": [valid_sample(1)]}
    other = {"rubric": "efficiency-only", "samples": [valid_sample(2)]}
    key = {"Idempotency-Key": "bound-to-its-body"}
    with server.client() as http:
        first = http.post("/v1/rewards", json=body, headers=key)
        again = http.post("/v1/rewards", json=body, headers=key)
        reused = http.post("/v1/rewards", json=other, headers=key)
    assert first.status_code == 200 and again.content == first.content
    assert again.headers["idempotent-replayed"] == "true"
    assert reused.status_code == 422 and reused.json()["code"] == "idempotency_key_reused"


# -- hostile rubrics ---------------------------------------------------------------

RUBRIC = (
    "name: {name}\nversion: {version}\ncomponents:\n"
    "  e: {{grader: efficiency, config: {{max_turns: 10}}}}\n"
)


RUBRIC_NAMES = itertools.count()


def laughs(levels: int) -> str:
    lines = ["l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels + 1):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n"


@st.composite
def hostile_rubrics(draw: st.DrawFn) -> tuple[str, str, bool]:
    """A rubric text, its name (new each time), and whether it is valid."""
    name = f"fz-{next(RUBRIC_NAMES)}"
    base = RUBRIC.format(name=name, version=1)
    kind = draw(
        st.sampled_from(
            [
                "valid",
                "laughs",
                "deep",
                "bigint",
                "version_range",
                "unary",
                "literal",
                "args",
                "parens",
                "garbage",
            ]
        )
    )
    if kind == "valid":
        return base + "combine: 'e * 0.5 + 0.5 * min(e, 1)'\n", name, True
    if kind == "laughs":
        return base + laughs(draw(st.integers(5, 9))), name, False
    if kind == "deep":
        d = draw(st.integers(40, 20_000))
        return base + "description: " + "[" * d + "]" * d + "\n", name, False
    if kind == "bigint":
        return RUBRIC.format(name=name, version="9" * draw(st.integers(20, 6_000))), name, False
    if kind == "version_range":
        version = draw(st.integers(2**31, 2**62))
        return RUBRIC.format(name=name, version=version), name, False
    if kind == "unary":
        return base + f"combine: '{'-' * draw(st.integers(40, 50_000))}e'\n", name, False
    if kind == "literal":
        return base + f"combine: 'e * {'9' * draw(st.integers(310, 5_000))}'\n", name, False
    if kind == "args":
        n = draw(st.integers(300, 100_000))
        return base + f"combine: 'min({', '.join(['e'] * n)})'\n", name, False
    if kind == "parens":
        d = draw(st.integers(200, 5_000))  # Python's parser takes fewer; they add no terms
        return base + f"combine: '{'(' * d}e{')' * d}'\n", name, False
    return draw(st.text(max_size=200)), name, False


def test_hostile_rubric_registration_gets_4xx_json_and_never_stalls(server: Server) -> None:
    created = 0
    with (
        healthz_poller(server, "rubric fuzz"),
        server.client("admin") as admin,
        server.client() as trainer,
    ):

        @FUZZ
        @given(case=hostile_rubrics())
        def check(case: tuple[str, str, bool]) -> None:
            nonlocal created
            text, name, valid = case
            response = admin.post("/v1/rubrics", json={"yaml": text})
            assert_json_error_or_ok(response, text[:200])
            if valid:
                assert response.status_code == 201, response.text[:500]
                created += 1
            else:
                assert response.status_code == 422, response.text[:500]
            # Nothing refused entered the catalog; what was taken is gradable.
            graded = trainer.post(
                "/v1/rewards", json={"rubric": name, "samples": [valid_sample(0)]}
            )
            assert graded.status_code == (200 if valid else 404), graded.text[:300]
            assert admin.get("/v1/rubrics").status_code == 200

        check()
    assert created > 0


def test_hostile_rubric_files_are_reported_and_skipped(start_server: StartServer) -> None:
    server = start_server()
    bad = {
        "laughs.yaml": RUBRIC.format(name="laughs", version=1) + laughs(8),
        "deep.yaml": RUBRIC.format(name="deep", version=1) + "x: " + "[" * 30_000 + "]" * 30_000,
        "bigint.yaml": RUBRIC.format(name="bigint", version="9" * 5_000),
        "range.yaml": RUBRIC.format(name="range", version=2**40),
        "unary.yaml": RUBRIC.format(name="unary", version=1) + f"combine: '{'-' * 50_000}e'\n",
        "literal.yaml": RUBRIC.format(name="literal", version=1) + f"combine: 'e*{'9' * 400}'\n",
        "args.yaml": RUBRIC.format(name="args", version=1)
        + f"combine: 'max({', '.join(['e'] * 50_000)})'\n",
        "binary.yaml": "\udcff",
    }
    good = RUBRIC.format(name="good-after-bad", version=1)
    with healthz_poller(server, "rubric files"), server.client() as http:
        for name, text in bad.items():
            (server.rubric_dir / name).write_bytes(text.encode("utf-8", "surrogateescape"))
        (server.rubric_dir / "zz-good.yaml").write_text(good)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            checks = http.get("/readyz").json()["checks"]
            listed = checks.get("invalid_rubric_files", "")
            loaded = http.post(
                "/v1/rewards", json={"rubric": "good-after-bad", "samples": [valid_sample(0)]}
            )
            if all(n in listed for n in bad) and loaded.status_code == 200:
                break
            time.sleep(0.2)
        else:
            pytest.fail(f"not all bad files reported: {checks}")
    log = server.log.read_text()
    assert all(f"{n} is invalid" in log for n in bad)
    # Never fatal: a restart with the same folder starts and reports them again.
    server.kill(signal.SIGTERM)
    server.start()
    with server.client() as http:
        listed = http.get("/readyz").json()["checks"]["invalid_rubric_files"]
    assert all(n in listed for n in bad)


# -- keys ---------------------------------------------------------------------------


def test_cli_revocation_takes_effect_and_the_last_admin_key_stays(
    start_server: StartServer,
) -> None:
    server = start_server()
    with server.client("admin") as admin:
        keys = {k["name"]: k for k in admin.get("/v1/keys").json()}
        last_admin = admin.delete(f"/v1/keys/{keys['test-admin']['id']}")
        assert last_admin.status_code == 409 and last_admin.json()["code"] == "last_admin_key"
        # Random keys: each is refused, and none makes the server fail.
        for i in range(200):
            assert (
                admin.get("/v1/keys", headers={"Authorization": f"Bearer nope-{i}"}).status_code
                == 401
            )
    with server.client() as trainer:
        body = {"rubric": "efficiency-only", "samples": [valid_sample(0)]}
        assert trainer.post("/v1/rewards", json=body).status_code == 200  # cached as valid
        done = subprocess.run(
            [sys.executable, "-m", "arbiter", "keys", "revoke", keys["test-trainer"]["id"]],
            env=server.env,
            cwd=REPO,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        revoked_at = time.monotonic()
        while trainer.post("/v1/rewards", json=body).status_code != 401:
            assert time.monotonic() - revoked_at < 30, "the revoked key kept working"
            time.sleep(0.05)
        print(f"\nrevoked key refused after {time.monotonic() - revoked_at:.2f} s")


# -- store faults -------------------------------------------------------------------

LOCKER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
"""


def wait_ready(http: httpx.Client, ready: bool) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        response = http.get("/readyz")
        if (response.status_code == 200) == ready:
            body: dict[str, Any] = response.json()
            return body
        assert time.monotonic() < deadline, response.text
        time.sleep(0.1)


def logged_request_ids(db_url: str) -> set[str]:
    from sqlalchemy import select

    from arbiter.store.tables import requests

    store = Store(db_url)
    try:
        with store.engine.connect() as conn:
            return {r.id for r in conn.execute(select(requests.c.id))}
    finally:
        store.close()


def fault_round(server: Server, label: str, start_fault: Any, end_fault: Any) -> None:
    """Send batches through a store fault; check 503s, readiness, recovery, nothing lost."""
    acknowledged: list[str] = []
    with healthz_poller(server, label), server.client() as http:
        body = {"rubric": "efficiency-only", "samples": [valid_sample(i) for i in range(50)]}
        first = http.post("/v1/rewards", json=body)
        assert first.status_code == 200
        acknowledged.append(first.json()["request_id"])
        start_fault()
        try:
            refused = 0
            for _ in range(200):
                response = http.post("/v1/rewards", json=body)
                if response.status_code == 200:
                    acknowledged.append(response.json()["request_id"])
                    continue
                assert response.status_code == 503, response.text
                assert response.json()["code"] == "store_unavailable"
                refused += 1
                if refused >= 3:
                    break
            assert refused >= 3, "the fault never failed a write"
            checks = wait_ready(http, ready=False)["checks"]
            assert checks["store"].startswith("writes failing"), checks
        finally:
            end_fault()
        wait_ready(http, ready=True)
        after = http.post("/v1/rewards", json=body)
        assert after.status_code == 200
        acknowledged.append(after.json()["request_id"])
    assert set(acknowledged) <= logged_request_ids(server.db_url)


def test_sqlite_locked_by_another_process(start_server: StartServer) -> None:
    server = start_server()
    path = server.db_url.removeprefix("sqlite:///")
    holder: list[subprocess.Popen[str]] = []

    def lock() -> None:
        process = subprocess.Popen(
            [sys.executable, "-c", LOCKER, path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        holder.append(process)
        assert process.stdout is not None and process.stdout.readline().strip() == "locked"

    def unlock() -> None:
        for process in holder:
            assert process.stdin is not None
            process.stdin.write("\n")
            process.stdin.flush()
            process.wait(timeout=30)

    fault_round(server, "sqlite locked", lock, unlock)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 16 MiB tmpfs (root only, as in CI), unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (CI runs as root)")
    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_store_disk_full(start_server: StartServer, small_disk: Path) -> None:
    server = start_server(database_url=f"sqlite:///{small_disk / 'arbiter.db'}")
    filler = small_disk / "filler"

    def fill() -> None:
        with filler.open("wb") as f:
            try:
                while True:
                    f.write(b"\0" * (1 << 16))
                    f.flush()
            except OSError:
                pass

    fault_round(server, "disk full", fill, filler.unlink)


# -- process hygiene ----------------------------------------------------------------

STATIC_RUBRIC = """\
name: static
version: 1
components:
  security: {grader: bandit, weight: 0.5}
  complexity: {grader: radon, weight: 0.5}
"""


def descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_kill_9_leaves_no_process_behind(start_server: StartServer) -> None:
    server = start_server()
    (server.rubric_dir / "static.yaml").write_text(STATIC_RUBRIC)
    body = {
        "rubric": "static",
        "samples": [
            {"id": f"c{i}", "response": f"```python\ndef f(x):\n    return x + {i}\n```"}
            for i in range(8)
        ],
    }
    with server.client() as http:
        deadline = time.monotonic() + 60
        while (response := http.post("/v1/rewards", json=body)).status_code == 404:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert response.status_code == 200, response.text
    assert server.process is not None
    children = descendants(server.process.pid)
    assert len(children) >= 2, "the analysis pool did not start"  # forkserver + workers
    server.process.send_signal(signal.SIGKILL)
    server.process.wait(timeout=30)
    deadline = time.monotonic() + 30
    while (left := {p for p in children if alive(p)}) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, f"left behind: {sorted(left)}"
