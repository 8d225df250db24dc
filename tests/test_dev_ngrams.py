"""No five-word run of a development question is typed into the project's code, unit tests or package data
(`eval/dev_ngrams.py`; dev questions are for measuring, issue 22). Runs on the bundled benchmark copies only."""

from __future__ import annotations

from pathlib import Path

from eval.dev_ngrams import counted_files, dev_runs, runs, typed_dev_runs

ROOT = Path(__file__).resolve().parents[1]


def test_no_dev_question_run_is_typed_into_the_project() -> None:
    found = typed_dev_runs(ROOT)
    listed = "\n".join(f"  {rel}: {hits}" for rel, hits in found.items())
    assert not found, f"{sum(len(h) for h in found.values())} dev-question five-word runs typed in:\n{listed}"


def test_runs_are_five_word_windows_and_train_phrasing_does_not_count(tmp_path: Path) -> None:
    assert runs(["Which keeper looks after the most animals?"]) == {
        "which keeper looks after the", "keeper looks after the most", "looks after the most animals"}
    assert runs(["too short to count"]) == set()
    dev = dev_runs()
    assert len(dev) > 20_000  # every family was read
    assert "how many animals does each" not in dev  # a run no dev question has


def test_what_is_counted(tmp_path: Path) -> None:
    for rel in ("kbqa/a.py", "tests/test_a.py", "bench/b.py", "tests/fixtures/c.py", "kbqa/w.json",
                "eval/benchmarks/x.json", "notes.md"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("", encoding="utf-8")
    assert counted_files(tmp_path) == ["kbqa/a.py", "kbqa/w.json", "tests/test_a.py"]
