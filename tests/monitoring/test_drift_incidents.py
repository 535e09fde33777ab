"""Drift incidents: one event's alerts are one incident; separate events stay separate."""

from __future__ import annotations

import pytest

from arbiter.monitoring.drift_incidents import group_incidents


def alert(
    id: str, opened: float, closed: float | None = None, rubric: str = "r", component: str = "c"
) -> dict[str, object]:
    return {
        "id": id,
        "rubric": rubric,
        "component": component,
        "grader_version": "1",
        "detector": "cusum",
        "message": "m",
        "opened_at": opened,
        "closed_at": closed,
    }


def test_alerts_of_one_shift_are_one_incident() -> None:
    rows = [alert(f"a{i}", 100.0 + i, component=f"c{i % 3}") for i in range(6)]
    (incident,) = group_incidents(rows)
    assert [m.id for m in incident.members] == [f"a{i}" for i in range(6)]
    assert incident.id == "a0" and incident.open and incident.components == ["c0", "c1", "c2"]


def test_rubrics_and_distant_events_are_separate_incidents() -> None:
    rows = [
        alert("a", 0.0, closed=10.0),
        alert("b", 5.0, closed=20.0),
        alert("c", 5000.0),  # long after the first event closed
        alert("d", 1.0, rubric="other", closed=2.0),
    ]
    incidents = group_incidents(rows, gap_s=60.0)
    assert [(i.rubric, [m.id for m in i.members]) for i in incidents] == [
        ("r", ["c"]),
        ("other", ["d"]),
        ("r", ["a", "b"]),
    ]
    assert incidents[2].closed_at == 20.0


def test_an_open_alert_keeps_its_incident_going() -> None:
    rows = [alert("a", 0.0), alert("b", 3600.0)]
    (incident,) = group_incidents(rows, gap_s=60.0)
    assert [m.id for m in incident.members] == ["a", "b"]


def test_the_older_field_name_still_reads() -> None:
    row = alert("a", 0.0)
    row["rubric_name"] = row.pop("rubric")
    assert group_incidents([row])[0].rubric == "r"


def test_a_negative_gap_is_an_error() -> None:
    with pytest.raises(ValueError, match="gap_s"):
        group_incidents([], gap_s=-1)
