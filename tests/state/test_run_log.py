"""The run audit: whole lines, a torn last line skipped, rotation that keeps one old file."""

from __future__ import annotations

from pathlib import Path

from fastagent_cli.state.run_log import RunLog


def test_records_append_and_filter_by_name(tmp_path: Path) -> None:
    runs = RunLog(tmp_path / "schedule")
    runs.append({"name": "a", "outcome": "completed"})
    runs.append({"name": "wake", "outcome": "deferred"})
    runs.append({"name": "a", "outcome": "failed"})
    assert [r["outcome"] for r in runs.records("a")] == ["completed", "failed"]
    assert len(runs.records()) == 3
    assert RunLog(tmp_path / "nowhere").records("a") == []


def test_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    runs = RunLog(tmp_path)
    runs.append({"name": "a", "outcome": "completed"})
    with open(runs.path, "a", encoding="utf-8") as fh:
        fh.write('{"name": "a", "outc')  # the process died mid-write
    assert [r["outcome"] for r in runs.records("a")] == ["completed"]


def test_a_big_log_rotates_and_history_spans_both_files(tmp_path: Path) -> None:
    runs = RunLog(tmp_path, rotate_bytes=200)
    for i in range(12):
        runs.append({"name": "a", "n": i, "reply": "x" * 40})
    assert (tmp_path / "runs.1.jsonl").exists()
    kept = [r["n"] for r in runs.records("a")]
    assert kept == list(range(kept[0], 12)) and kept[0] > 0  # the oldest went, the order stays
    assert runs.path.stat().st_size < 200 + 100
