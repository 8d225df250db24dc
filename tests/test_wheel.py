"""The wheel carries every file the code reads at run time: built from a copy of the checkout, installed
(`--no-deps`, into a folder outside the tree, over this test venv's dependencies), it holds every tracked
non-.py file of the packages, and `kbqa ask` there gives the same answer and translate detail as the checkout.

An installed explore without `explore/features/structure_prior.json` ran silently without its structure prior (issue 24);
the comparison below includes the ranked candidates' feature contributions, and the installed copy must rank with
the shipped fitted trees (`explore/rank/ranker.json`) read from its own package.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from kb_dumps.ingest import ingest
from kb_dumps.samples import get_sample

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("kbqa", "kb_dumps", "grounding", "assembler", "eval")
BUILD_FILES = ("pyproject.toml", "README.md")
QUESTION = "How many beasts have the fire element?"
# run the kbqa found on PYTHONPATH (argv[1] must hold it: never the checkout by accident) as the `kbqa` command
RUN = ("import sys, kbqa; assert kbqa.__file__.startswith(sys.argv[1]), kbqa.__file__; "
       "from kbqa.cli import main; sys.exit(main(sys.argv[2:]))")


def git_files(*args: str) -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files", "-z", *args], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked files are unknown")
    return [p for p in out.decode("utf-8").split("\0") if p]


def data_files() -> list[str]:
    """Tracked non-.py files under the packages, test files aside."""
    return [p for p in git_files(*PACKAGES) if not p.endswith(".py") and "/tests/" not in f"/{p}"
            and not Path(p).name.startswith("test_")]


def build_wheel(out: Path) -> Path:
    """The wheel of the working tree's files (tracked and not ignored), built in a copy so that no build/ or
    egg-info lands in the checkout."""
    src = out / "src"
    for rel in [*BUILD_FILES, *git_files("--cached", "--others", "--exclude-standard", *PACKAGES)]:
        if (ROOT / rel).is_file():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, src / rel)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", str(src),
                    "-w", str(out / "dist")], cwd=out, check=True, capture_output=True, timeout=300)
    (wheel,) = (out / "dist").glob("kbqa-*.whl")
    return wheel


def ask(site: Path, store: Path, home: Path, cwd: Path) -> dict[str, Any]:
    # a budget no search reaches: on a busy machine one run could stop its search early and check fewer candidates
    # than the other, and the two must differ only by where the package comes from
    env = {**os.environ, "PYTHONPATH": str(site), "KBQA_HOME": str(home), "HF_HUB_OFFLINE": "1",
           "PYTHONNOUSERSITE": "1", "KBQA_EXPLORE_BUDGET_S": "60"}
    proc = subprocess.run([sys.executable, "-c", RUN, str(site), "ask", QUESTION, "--store", str(store),
                           "--translator", "explore", "--format", "json"], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def comparable(result: dict[str, Any]) -> dict[str, Any]:
    """What must agree: the answers, the steps' details and the translation's details (timings and the path of
    the shipped weights file aside)."""
    details = dict(result["translation"]["details"])
    details["search"] = {k: v for k, v in details.get("search", {}).items() if k != "seconds"}
    details["ranker"] = {k: v for k, v in details.get("ranker", {}).items() if k != "file"}
    return {"status": result["status"], "sparql": result["sparql"], "answers": result["answers"],
            "steps": [(s["stage"], s["ok"], s["detail"]) for s in result["steps"]],
            "text": result["translation"]["text"], "details": details}


@pytest.mark.slow
def test_installed_wheel_has_every_data_file_and_answers_as_the_checkout(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = [p for p in data_files() if p not in names]
    assert not missing, f"not in the wheel (add them to [tool.setuptools.package-data]): {missing}"

    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-compile", "-q", "--target",
                    str(site), str(wheel)], check=True, capture_output=True, timeout=300)
    assert (site / "kbqa" / "translators" / "explore" / "features" / "structure_prior.json").is_file()

    sample = get_sample("bestiary")
    store = tmp_path / "bestiary"
    ingest(sample.paths(), store, profile=sample.profile, progress=False)
    work = tmp_path / "elsewhere"  # outside the tree: the checkout is not on sys.path by the current folder
    work.mkdir()
    checkout = ask(ROOT, store, tmp_path / "home-checkout", work)
    installed = ask(site, store, tmp_path / "home-installed", work)
    assert installed["status"] == "ok" and installed["answers"]["rows"]
    assert comparable(installed) == comparable(checkout)
    best = installed["translation"]["details"]["candidates"][0]
    assert best["contributions"], best  # the ranker scored it with its features
    # the shipped fitted trees, read from the installed package (not the hand-set fallback, not the checkout)
    ranker = installed["translation"]["details"]["ranker"]
    assert ranker["kind"] == "trees" and ranker["file"].startswith(str(site)), ranker
