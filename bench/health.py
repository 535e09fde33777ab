"""Health under load: ``/healthz`` and ``/readyz`` answer within a probe's timeout, always.

Run as ``python -m bench.health [--levels 4] [--seconds 20]``. In the same run,
against one live ``arbiter serve`` (SQLite, the default registry):

* quiet: probes of ``/healthz`` and ``/readyz`` every ``--every-ms`` while an
  admin registers hostile rubrics in a loop (a 20,000-term formula, YAML nested
  5,000 deep, 6,000 unknown keys, 3,000 misspelled config keys);
* the same under ``L x cores`` busy processes (``arbiter.load.cpu_load``), for
  each level ``L``.

It prints, for each level and probe, the answers, the share that took over 1 s
(Kubernetes' default probe timeout) and the p50, p99 and max latency, and each
hostile rubric's answer and time; the worst probe latency is last.

The probes come from a process of their own, in a session of its own, as a
kubelet's do (it is not in the service's scheduling group): their clients are
made before the window opens, so what is timed is the service's answer, not a
client's start on a starved CPU. A probe that has not answered by the end of
the window counts, at the time it had waited. The hostile rubrics are built
before the window too.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from argparse import SUPPRESS
from pathlib import Path

import httpx

from arbiter.load import cpu_load
from bench.serve import arbiter_serve

#: Kubernetes' default timeoutSeconds for a probe.
PROBE_TIMEOUT_S = 1.0
_HEAD = "name: hostile-{n}\nversion: 1\ncomponents:\n  tests:\n    grader: unit_tests\n"


def hostile_rubrics() -> dict[str, str]:
    """Return the rubrics an attacker (or a broken generator) sends, by name."""
    formula = " + ".join(["0.0001 * tests"] * 20_000)
    return {
        "formula_20k_terms": _HEAD + f"    weight: 1.0\ncombine: {{formula: '{formula}'}}\n",
        "yaml_5000_deep": _HEAD
        + "    weight: 1.0\n    config:\n      x: "
        + "[" * 5_000
        + "]" * 5_000
        + "\n",
        "yaml_5000_deep_block": _HEAD
        + "    weight: 1.0\nx:\n"
        + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(5_000)),
        "keys_6000_unknown": _HEAD
        + "    weight: 1.0\n"
        + "".join(f"k{i}: 1\n" for i in range(6_000)),
        "config_3000_misspelt": _HEAD
        + "    weight: 1.0\n    config:\n"
        + "".join(f"      timeout{i}: 1\n" for i in range(3_000)),
    }


def _probe(client: httpx.Client, url: str, every_s: float, until: float, out: list[float]) -> None:
    while time.perf_counter() < until:
        started = time.perf_counter()
        try:
            client.get(url, timeout=max(0.1, until - started + PROBE_TIMEOUT_S))
            out.append(time.perf_counter() - started)
        except httpx.TimeoutException:
            out.append(time.perf_counter() - started)  # unanswered when the window closed
        except httpx.HTTPError:
            out.append(float("inf"))
        time.sleep(max(0.0, every_s - (time.perf_counter() - started)))


def prober(url: str, seconds: float, every_s: float) -> None:
    """Probe both endpoints for ``seconds`` (after a line on stdin); print the latencies as JSON."""
    clients = {path: httpx.Client() for path in PATHS}
    for path, client in clients.items():
        client.get(f"{url}{path}")  # connected before the window, as a kubelet's would be
    print("ready", flush=True)
    sys.stdin.readline()
    until = time.perf_counter() + seconds
    probes: dict[str, list[float]] = {path: [] for path in PATHS}
    threads = [
        threading.Thread(target=_probe, args=(clients[p], f"{url}{p}", every_s, until, probes[p]))
        for p in PATHS
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(json.dumps(probes), flush=True)


#: The probed endpoints.
PATHS = ("/healthz", "/readyz")


def _register(
    client: httpx.Client, url: str, key: str, stop: threading.Event, seen: dict[str, list[float]]
) -> None:
    rubrics = [(name, {"yaml": text}) for name, text in hostile_rubrics().items()]
    headers = {"Authorization": f"Bearer {key}"}
    while not stop.is_set():
        for name, body in rubrics:
            if stop.is_set():
                return
            started = time.perf_counter()
            answer = client.post(f"{url}/v1/rubrics", json=body, headers=headers)
            seen.setdefault(f"{name} -> {answer.status_code}", []).append(
                time.perf_counter() - started
            )


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure(
    url: str, key: str, seconds: float, every_s: float, level: float
) -> tuple[int, dict[str, list[float]], dict[str, list[float]]]:
    """Probe both endpoints while hostile rubrics are registered under ``level`` x cores of load.

    Returns the busy processes, the probes' latencies and the registrations' answers.
    """
    probe = subprocess.Popen(
        [sys.executable, "-m", "bench.health", "--probe", url, str(seconds), str(every_s)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        start_new_session=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert probe.stdin is not None and probe.stdout is not None
    if probe.stdout.readline().strip() != b"ready":
        raise RuntimeError("the prober did not start")
    stop = threading.Event()
    registered: dict[str, list[float]] = {}
    with httpx.Client(timeout=120) as client, cpu_load(level) as busy:
        client.get(f"{url}/healthz")
        thread = threading.Thread(target=_register, args=(client, url, key, stop, registered))
        probe.stdin.write(b"go\n")
        probe.stdin.flush()
        thread.start()
        out, _ = probe.communicate(timeout=seconds + 120)
        stop.set()
        thread.join()
    return busy, json.loads(out), registered


def main() -> None:
    """Measure quiet, then under each load level; print the worst probe latency last."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--levels", type=float, nargs="+", default=[4.0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--every-ms", type=float, default=100.0)
    parser.add_argument("--probe", nargs=3, metavar=("URL", "SECONDS", "EVERY_S"), help=SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        prober(args.probe[0], float(args.probe[1]), float(args.probe[2]))
        return
    from arbiter.store.db import Store

    worst = 0.0
    with tempfile.TemporaryDirectory(prefix="bench-health-") as tmp:
        db_url = f"sqlite:///{Path(tmp) / 'health.db'}"
        store = Store(db_url)
        store.migrate()
        _, key = store.create_key("bench-admin", "admin")
        store.close()
        with arbiter_serve(db_url) as (url, _server):
            for level in [0.0, *args.levels]:
                label = "quiet" if level == 0 else f"{level:g}x cores busy"
                busy, probes, registered = measure(
                    url, key, args.seconds, args.every_ms / 1000, level
                )
                print(f"== {label} ({busy} busy processes), {args.seconds:g} s")
                for path, latencies in probes.items():
                    if not latencies:
                        print(f"  {path:9s} no probe was sent")
                        continue
                    late = sum(x > PROBE_TIMEOUT_S for x in latencies)
                    worst = max(worst, max(latencies))
                    print(
                        f"  {path:9s} {len(latencies):4d} probes  over 1 s: {late:3d}  "
                        f"p50 {1000 * statistics.median(latencies):7.1f} ms  "
                        f"p99 {1000 * _percentile(latencies, 0.99):7.1f} ms  "
                        f"max {1000 * max(latencies):7.1f} ms"
                    )
                for what, times in sorted(registered.items()):
                    print(
                        f"  register {what:32s} x{len(times):3d}  max {1000 * max(times):7.1f} ms"
                    )
    print(
        f"worst probe latency: {1000 * worst:.1f} ms (the limit: {1000 * PROBE_TIMEOUT_S:.0f} ms)"
    )


if __name__ == "__main__":
    main()
