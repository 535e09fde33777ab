"""``-o`` never hurts its target: devices and FIFOs written through, links followed, modes kept."""

from __future__ import annotations

import json
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arbiter.cli import app
from tests.strictness import unavailable

REPO = Path(__file__).resolve().parents[2]
RUBRIC = REPO / "rubrics" / "library" / "efficiency.yaml"
DEMO = REPO / "eval_sets" / "demo.jsonl"
runner = CliRunner()


def score(output: str) -> str:
    result = runner.invoke(app, ["score", "--rubric", str(RUBRIC), str(DEMO), "-o", output])
    assert result.exit_code == 0, result.output
    return result.output


def rewards(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_a_fifo_is_written_through_and_stays_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "rewards.fifo"
    os.mkfifo(fifo)
    os.chmod(fifo, 0o620)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    score(str(fifo))
    reader.join(timeout=30)
    mode = fifo.lstat().st_mode
    assert stat.S_ISFIFO(mode) and stat.S_IMODE(mode) == 0o620
    assert rewards(got[0].decode())


def test_a_character_device_is_written_through_not_replaced(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        unavailable("only root can make a device node")  # the FIFO test covers the rest
    null = tmp_path / "null"  # a node of its own for the null device, never the host's
    os.mknod(null, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    os.chmod(null, 0o666)
    score(str(null))
    mode = null.lstat().st_mode
    assert stat.S_ISCHR(mode) and stat.S_IMODE(mode) == 0o666


def test_a_symlink_stays_a_link_and_its_target_gets_the_rewards(tmp_path: Path) -> None:
    target = tmp_path / "real.jsonl"
    target.write_text("old\n")
    os.chmod(target, 0o640)
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    score(str(link))
    assert link.is_symlink() and link.resolve() == target
    assert rewards(target.read_text())
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # a replaced file keeps its mode


def test_dash_writes_to_stdout_and_the_tables_go_elsewhere(tmp_path: Path) -> None:
    text = score("-")
    assert rewards(text)
    assert not (Path.cwd() / "-").exists()


@pytest.mark.usefixtures("umask_022")
def test_a_new_file_follows_the_umask(tmp_path: Path) -> None:
    fresh = tmp_path / "new.jsonl"
    score(str(fresh))
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o644
    assert rewards(fresh.read_text())
