"""Code runs: ``POST /v1/run``, and SandboxFusion's ``/run_code`` for trainers configured for it."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import JSONResponse

from arbiter.api.body import json_body_openapi, parse_body
from arbiter.api.deps import Caller, ServiceDep
from arbiter.api.schemas import ErrorBody
from arbiter.graders.run_code import RunCodeRequest

router = APIRouter(tags=["runs"])

ERRORS: dict[int | str, dict[str, object]] = {
    code: {"model": ErrorBody, "description": text}
    for code, text in {
        401: "No or unknown API key (SandboxFusion's clients send none of their own: put the "
        "key in the URL, http://trainer:KEY@host/run_code, which they send as HTTP Basic).",
        403: "The key's role may not run code (a trainer key may).",
        413: "Body over the limit.",
        422: "The request does not validate, or names a language this service does not run.",
        429: "Over the bound of runs in flight, or this key's share of it; see Retry-After.",
    }.items()
}

DESCRIPTION = """Run one program with its stdin, confined as a grading is (same limits,
same sandbox, same compile cache: a call per test case compiles once), and answer as
SandboxFusion does: `status` (`Success`, `Failed`, `SandboxError`), `compile_result` and
`run_result` (each `status` `Finished`, `Error` or `TimeLimitExceeded`, with `execution_time`,
`return_code`, `stdout`, `stderr`; streams cut at 1 MiB). Ours besides: `failure` (the typed
kind: `compile_error`, `compile_timeout`, `runtime_error`, `timeout`, `memory_limit`,
`output_limit`, `sandbox_error`) and `memory_mb`. `files` (base64 by relative path) are
written into the run's directory first; `fetch_files` are read back from it once every process
of the run is gone, into `files` of the answer (a file absent, not a regular file, or past
16 MiB in all is left out; `files_not_fetched` says why). `run_timeout` is CPU seconds of the
program's own work, as a grading's limit is."""


async def _run(request: Request, service: ServiceDep, caller: Caller) -> JSONResponse:
    body, _ = parse_body(await request.body(), RunCodeRequest)
    return JSONResponse(await service.runs.run(body, caller))


for _path, _summary in (
    ("/v1/run", "Run code"),
    ("/run_code", "Run code (SandboxFusion's path)"),
    ("/v1/sandbox_fusion/run_code", "Run code (SandboxFusion's API under /v1)"),
):
    router.add_api_route(
        _path,
        _run,
        methods=["POST"],
        summary=_summary,
        description=DESCRIPTION,
        responses=ERRORS,
        openapi_extra=json_body_openapi(RunCodeRequest),
        name=f"run_code{_path.replace('/', '_')}",
    )
