"""Repository snapshots over HTTP: uploaded once, referenced by id, graded through /v1/rewards."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from arbiter.graders.repository.snapshots import SnapshotError, SnapshotStore
from tests.api.conftest import Server, StartServer
from tests.graders.repository.conftest import BugTask, _bug_task

pytestmark = pytest.mark.slow

REPO_RUBRIC = """\
name: repo
version: 1
components:
  tests: {grader: unit_tests, weight: 1.0, required: true}
"""


def _tar_gz(tree: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(tree, arcname="toolz-bug")
    return buf.getvalue()


@pytest.fixture(scope="module")
def bug_tarball(tmp_path_factory: pytest.TempPathFactory) -> tuple[BugTask, bytes]:
    root = tmp_path_factory.mktemp("bug")
    bug = _bug_task(SnapshotStore(root / "local"), root, hidden=True)
    return bug, _tar_gz(root / "tree")


@pytest.fixture(scope="module")
def repo_server(start_server: StartServer, tmp_path_factory: pytest.TempPathFactory) -> Server:
    store = tmp_path_factory.mktemp("service-store")
    return start_server(rubrics={"repo": REPO_RUBRIC}, repository_store=str(store))


def test_a_snapshot_is_uploaded_once_and_graded_by_id(
    repo_server: Server, bug_tarball: tuple[BugTask, bytes]
) -> None:
    bug, data = bug_tarball
    with repo_server.client() as http:
        first = http.post("/v1/repositories", content=data)
        again = http.post("/v1/repositories", content=data)
        assert first.status_code == 201, first.text
        assert again.json() == first.json()
        snapshot_id = first.json()["id"]
        assert snapshot_id == bug.snapshot.id  # content-addressed: the same tree, the same id
        assert http.get(f"/v1/repositories/{snapshot_id}").json()["files"] == bug.snapshot.files
        task = bug.task.model_dump() | {"repository": snapshot_id}
        samples = [
            {"id": "gold", "response": bug.gold, "task": task},
            {"id": "empty", "response": "", "task": task},
        ]
        body = http.post("/v1/rewards", json={"rubric": "repo", "samples": samples}).json()
    rewards = {r["sample_id"] if "sample_id" in r else r["id"]: r for r in body["rewards"]}
    assert rewards["gold"]["reward"] == 1.0
    assert rewards["empty"]["reward"] == 0.0


def test_a_tarball_that_reaches_out_is_refused(repo_server: Server) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("proj/../../escape.py")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    with repo_server.client() as http:
        answer = http.post("/v1/repositories", content=buf.getvalue())
        unknown = http.get("/v1/repositories/sha256:" + "0" * 64)
    assert answer.status_code == 422 and answer.json()["code"] == "invalid_snapshot"
    assert unknown.status_code == 404


def test_a_node_fetches_a_snapshot_by_id_once_and_keeps_it(
    repo_server: Server,
    bug_tarball: tuple[BugTask, bytes],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, data = bug_tarball
    with repo_server.client() as http:
        snapshot_id = http.post("/v1/repositories", content=data).json()["id"]
    monkeypatch.setenv("ARBITER_REPOSITORY_SOURCE", repo_server.url)
    monkeypatch.setenv("ARBITER_REPOSITORY_SOURCE_KEY", repo_server.keys["trainer"])
    node = SnapshotStore(tmp_path / "node")
    fetched = node.get(snapshot_id)
    assert fetched.id == snapshot_id and (fetched.tree / "toolz" / "itertoolz.py").exists()
    monkeypatch.setenv("ARBITER_REPOSITORY_SOURCE", "http://127.0.0.1:9")  # gone: the copy stays
    assert node.get(snapshot_id).tree == fetched.tree
    with pytest.raises(SnapshotError):
        node.get("sha256:" + "2" * 64)
