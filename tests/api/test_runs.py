"""Code runs against a live ``arbiter serve``: SandboxFusion's ``/run_code`` and ``/v1/run``."""

from __future__ import annotations

import base64
import concurrent.futures

import httpx
import pytest

from tests.api.conftest import Server, StartServer

pytestmark = pytest.mark.slow

DOUBLE_PY = "print(int(input()) * 2)\n"
FLOOD = "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n"
DOUBLE_CPP = (
    "#include <iostream>\nint main() { long a; std::cin >> a; std::cout << a * 2 << '\\n'; }\n"
)


def _run(server: Server, body: dict[str, object], path: str = "/run_code") -> httpx.Response:
    # SandboxFusion's clients send no header of their own: the key rides in the URL.
    key = server.keys["trainer"]
    url = server.url.replace("http://", f"http://trainer:{key}@") + path
    return httpx.post(url, json=body, timeout=120)


def test_a_program_runs_and_answers_in_sandbox_fusions_shape(server: Server) -> None:
    answer = _run(server, {"code": DOUBLE_PY, "language": "python", "stdin": "21"})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["status"] == "Success" and body["failure"] is None
    assert body["compile_result"] is None  # an interpreted language compiles nothing
    run = body["run_result"]
    assert run["status"] == "Finished" and run["return_code"] == 0
    assert run["stdout"] == "42\n" and run["stderr"] == ""
    assert run["execution_time"] > 0 and body["memory_mb"] > 0
    # The same under /v1 (with a Bearer key) and /v1/sandbox_fusion.
    with server.client() as client:
        for path in ("/v1/run", "/v1/sandbox_fusion/run_code"):
            again = client.post(path, json={"code": DOUBLE_PY, "language": "python", "stdin": "4"})
            assert again.json()["run_result"]["stdout"] == "8\n", path


@pytest.mark.parametrize(
    ("code", "status", "failure", "run_status"),
    [
        ("import sys\nsys.exit(3)\n", "Failed", "runtime_error", "Finished"),
        ("raise ValueError('no')\n", "Failed", "runtime_error", "Finished"),
        ("while True:\n    pass\n", "Failed", "timeout", "TimeLimitExceeded"),
        (
            "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n",
            "Failed",
            "output_limit",
            "Error",
        ),
        ("import sys\nsys.stdout.buffer.write(bytes(range(256)))\n", "Success", None, "Finished"),
    ],
    ids=["exit-3", "raises", "loops", "floods", "binary"],
)
def test_each_way_a_run_ends_is_typed(
    server: Server, code: str, status: str, failure: str | None, run_status: str
) -> None:
    answer = _run(server, {"code": code, "language": "python", "run_timeout": 1})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert (body["status"], body["failure"], body["run_result"]["status"]) == (
        status,
        failure,
        run_status,
    )
    assert len(body["run_result"]["stdout"].encode()) <= 4 << 20  # cut, never the flood


def test_a_compiled_program_is_compiled_once_for_every_case(server: Server) -> None:
    answers = [
        _run(server, {"code": DOUBLE_CPP, "language": "cpp", "stdin": str(n)}).json()
        for n in range(4)
    ]
    assert [a["run_result"]["stdout"] for a in answers] == ["0\n", "2\n", "4\n", "6\n"]
    assert all(a["compile_result"]["status"] == "Finished" for a in answers)
    broken = _run(server, {"code": "int main() { return x; }\n", "language": "cpp"}).json()
    assert broken["status"] == "Failed" and broken["failure"] == "compile_error"
    assert broken["run_result"] is None
    assert broken["compile_result"]["return_code"] != 0
    assert "was not declared" in broken["compile_result"]["stderr"]


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"code": "print(1)", "language": "cobol"}, "language: expected one of"),
        ({"code": "print(1)", "language": "python", "files": {"../a.txt": "eA=="}}, "files"),
        ({"code": "print(1)", "language": "python", "files": {"a.txt": "not base64!"}}, "base64"),
        ({"code": "print(1)", "language": "python", "fetch_files": ["../a.txt"]}, "fetch_files"),
        ({"code": "x" * (1 << 20 + 1), "language": "python"}, "code"),
        ({"code": "print(1)", "language": "python", "stdin": "\udcff"}, ""),
        ({"code": "print(1)", "language": "python", "memory_limit_MB": 10}, "memory_limit_MB"),
        ({"language": "python"}, "code"),
    ],
    ids=[
        "language",
        "outside",
        "not-base64",
        "fetch",
        "oversized",
        "not-utf8",
        "memory",
        "no-code",
    ],
)
def test_what_cannot_run_gets_a_422_that_says_why(
    server: Server, body: dict[str, object], says: str
) -> None:
    if body.get("stdin") == "\udcff":
        # Not UTF-8: JSON cannot carry it; sent raw, the body does not decode.
        key = server.keys["trainer"]
        raw = b'{"code": "print(1)", "language": "python", "stdin": "\xff"}'
        answer = httpx.post(
            f"{server.url}/run_code",
            content=raw,
            headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
            timeout=60,
        )
    else:
        answer = _run(server, body)
    assert answer.status_code == 422, answer.text
    assert says in answer.text


def test_extra_files_are_in_the_runs_directory(server: Server) -> None:
    files = {"data/in.txt": base64.b64encode(b"21\n").decode(), "empty": None}
    python = "import os\nprint(int(open('data/in.txt').read()) * 2, os.path.getsize('empty'))\n"
    answer = _run(server, {"code": python, "language": "python", "files": files}).json()
    assert answer["status"] == "Success", answer
    assert answer["run_result"]["stdout"] == "42 0\n"
    cpp = (
        "#include <fstream>\n#include <iostream>\n"
        'int main() { std::ifstream f("data/in.txt"); long a; f >> a; std::cout << a * 2; }\n'
    )
    answer = _run(server, {"code": cpp, "language": "cpp", "files": files}).json()
    assert answer["run_result"]["stdout"] == "42", answer


def test_files_the_run_leaves_are_fetched_once_it_is_gone(server: Server) -> None:
    fetch = ["out/result.txt", "copy", "absent.txt", "link", "out", "bg.txt"]
    python = (
        "import os, sys\n"
        "os.makedirs('out')\n"
        "open('out/result.txt', 'w').write(str(int(input()) * 2))\n"
        "open('copy', 'wb').write(open('in.bin', 'rb').read())\n"
        "os.symlink('/etc/passwd', 'link')\n"
        # A process left behind that would rewrite a file after the run: swept first.
        "if os.fork() == 0:\n"
        "    import time\n"
        "    time.sleep(0.5)\n"
        "    open('bg.txt', 'w').write('late')\n"
        "    os._exit(0)\n"
    )
    files = {"in.bin": base64.b64encode(bytes(range(256))).decode()}
    answer = _run(
        server,
        {"code": python, "language": "python", "stdin": "21", "files": files, "fetch_files": fetch},
    ).json()
    assert answer["status"] == "Success", answer
    got = {k: base64.b64decode(v) for k, v in answer["files"].items()}
    assert got == {"out/result.txt": b"42", "copy": bytes(range(256))}
    why = answer["files_not_fetched"]
    assert set(why) == {"absent.txt", "link", "out", "bg.txt"}
    assert why["absent.txt"] == "no such file" and why["out"] == "not a regular file"
    assert why["link"] == "a symbolic link (never followed)"
    assert "root:" not in str(answer)  # the link was never followed
    cpp = (
        "#include <fstream>\n#include <iostream>\n"
        'int main() { long a; std::cin >> a; std::ofstream("out.txt") << a * 3; }\n'
    )
    answer = _run(
        server, {"code": cpp, "language": "cpp", "stdin": "5", "fetch_files": ["out.txt"]}
    ).json()
    assert base64.b64decode(answer["files"]["out.txt"]) == b"15", answer
    # A program that never ran leaves nothing, and says so.
    broken = _run(
        server, {"code": "int main( {", "language": "cpp", "fetch_files": ["out.txt"]}
    ).json()
    assert broken["files"] == {} and broken["files_not_fetched"] == {
        "out.txt": "the program did not run"
    }


def test_runs_need_a_trainer_key(server: Server) -> None:
    body = {"code": DOUBLE_PY, "language": "python", "stdin": "1"}
    assert httpx.post(f"{server.url}/run_code", json=body, timeout=60).status_code == 401
    with server.client("reviewer") as client:
        assert client.post("/v1/run", json=body).status_code == 403


def test_past_a_keys_share_of_runs_the_rest_get_429_and_none_fails(
    start_server: StartServer,
) -> None:
    busy = start_server(per_key_max_inflight_runs="2")
    body = {"code": "import time\ntime.sleep(1.5)\nprint(1)\n", "language": "python"}

    def one(_: int) -> httpx.Response:
        return _run(busy, body)

    with concurrent.futures.ThreadPoolExecutor(8) as threads:
        answers = list(threads.map(one, range(8)))
    codes = sorted(a.status_code for a in answers)
    assert set(codes) == {200, 429}, codes
    assert all(a.headers.get("Retry-After") for a in answers if a.status_code == 429)
    assert all(a.json()["status"] == "Success" for a in answers if a.status_code == 200)


def test_a_thousand_concurrent_runs_get_200_or_429_and_health_still_answers(
    server: Server,
) -> None:
    import asyncio
    import time

    key = server.keys["trainer"]
    body = {"code": "print(sum(range(1000)))\n", "language": "python"}

    async def flood() -> tuple[list[int], list[float]]:
        limits = httpx.Limits(max_connections=1000, max_keepalive_connections=0)
        async with httpx.AsyncClient(
            base_url=server.url, timeout=300, limits=limits, auth=("trainer", key)
        ) as client:

            async def probe() -> list[float]:
                waits = []
                for _ in range(10):
                    started = time.perf_counter()
                    answer = await client.get("/healthz")
                    assert answer.status_code == 200
                    waits.append(time.perf_counter() - started)
                    await asyncio.sleep(0.2)
                return waits

            runs = [client.post("/run_code", json=body) for _ in range(1000)]
            *answers, waits = await asyncio.gather(*runs, probe())
            return [a.status_code for a in answers], waits

    codes, waits = asyncio.run(flood())
    assert set(codes) <= {200, 429} and 200 in codes, sorted(set(codes))
    assert len(waits) == 10  # every probe answered 200 meanwhile (bench.runs times them)
