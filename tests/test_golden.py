"""Golden Results: the same inputs give the same `Result` JSON through every entry point, before and after a refactor.

Recorded once (``KBQA_UPDATE_GOLDEN=1 pytest tests/test_golden.py``) and compared on every run: the 30 DeSQ
fixtures (`kbqa compile`, `Engine.ask` with and without execution through a replay of the same texts, and
`kbqa ask --translator replay` for a few), the 30 multi-hop QCompiler / PyRAG fixtures compiled with their leaves
translated by a replay of `leaves.json`; `kbqa compile` is compared with the recorded `Engine.compile` Results.
The stores are the bundled samples without a grounding index, so grounding is the label-memory check of guessed
URIs — cheap, deterministic, and independent of the embedding model. Timings and temporary paths are left out.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from kb_dumps.ingest import ingest
from kbqa.pipeline import Engine, Result
from kbqa.translators.replay import ReplayTranslator

FIXTURES = Path(__file__).parent / "fixtures"
GOLDEN = FIXTURES / "golden" / "results.json"
DESQ = json.loads((FIXTURES / "desq_real" / "fixtures.json").read_text(encoding="utf-8"))["fixtures"]
MULTIHOP = json.loads((FIXTURES / "multihop" / "cases.json").read_text(encoding="utf-8"))["cases"]
LEAVES: dict[str, str] = json.loads((FIXTURES / "multihop" / "leaves.json").read_text(encoding="utf-8"))
# `kbqa ask` runs for these fixtures too (one process-wide CLI run each costs a store open)
CLI_ASK = ("w_sq_1.desq", "b17_ask.desq", "w_qald9_41_union.desq")


def normalise(d: Any, tmp: str) -> Any:
    """The Result JSON without what differs between runs: timings and temporary directories."""
    if isinstance(d, dict):
        return {k: normalise(v, tmp) for k, v in d.items() if k != "seconds"}
    if isinstance(d, list):
        return [normalise(v, tmp) for v in d]
    if isinstance(d, str) and tmp:
        return d.replace(tmp, "<tmp>")
    return d


@pytest.fixture(scope="module")
def stores(wikidata_mini_store: Path, bestiary_store: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    qualifier = tmp_path_factory.mktemp("golden") / "qualifier"
    ingest([FIXTURES / "desq_real" / "qualifier.nt"], qualifier, profile="wikidata", progress=False)
    return {"wikidata-mini": wikidata_mini_store, "bestiary": bestiary_store, "qualifier": qualifier}


@pytest.fixture(scope="module")
def replays(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Replay files: the DeSQ fixtures by question id, and the multi-hop leaves by their question text."""
    root = tmp_path_factory.mktemp("replays")
    desq, leaves = root / "desq.jsonl", root / "leaves.jsonl"
    with open(desq, "w", encoding="utf-8") as f:
        for spec in DESQ:
            text = (FIXTURES / "desq_real" / spec["file"]).read_text(encoding="utf-8")
            f.write(json.dumps({"id": spec["file"], "question": spec["question"], "output": text}) + "\n")
    with open(leaves, "w", encoding="utf-8") as f:
        for i, (question, text) in enumerate(LEAVES.items()):
            f.write(json.dumps({"id": f"leaf{i}", "question": question, "output": text}) + "\n")
    return {"desq": desq, "leaves": leaves}


def collect(stores: dict, replays: dict[str, Path], run_cli: Any) -> dict[str, Any]:
    """Every golden Result, keyed by entry point and fixture."""
    out: dict[str, Any] = {}
    engines = {name: Engine(path, translator=ReplayTranslator(replays["desq"])) for name, path in stores.items()}
    try:
        for spec in DESQ:
            engine, text = engines[spec["store"]], (FIXTURES / "desq_real" / spec["file"]).read_text(encoding="utf-8")
            out[f"compile/{spec['file']}"] = engine.compile(text).to_dict()
            out[f"ask/{spec['file']}"] = engine.ask(spec["question"], qid=spec["file"]).to_dict()
            out[f"generate/{spec['file']}"] = engine.ask(spec["question"], qid=spec["file"], execute=False).to_dict()
    finally:
        for engine in engines.values():
            engine.close()
    leaf_engines = {name: Engine(stores[name], translator=ReplayTranslator(replays["leaves"]))
                    for name in ("wikidata-mini", "bestiary")}
    try:
        for case in MULTIHOP:
            engine = leaf_engines[case["store"]]
            for frontend, key in (("qcompiler", "expression"), ("pyrag", "program")):
                if case.get(key):
                    out[f"{frontend}/{case['id']}"] = engine.compile(case[key], frontend=frontend).to_dict()
    finally:
        for engine in leaf_engines.values():
            engine.close()
    by_file = {s["file"]: s for s in DESQ}
    for name in CLI_ASK:
        spec = by_file[name]
        code, stdout, _ = run_cli("ask", spec["question"], "--store", stores[spec["store"]], "--translator", "replay",
                                  "--replay", replays["desq"], "--id", name, "--format", "json")
        out[f"cli-ask/{name}"] = {"exit": code, "result": json.loads(stdout)}
    return out


def test_cli_compile_prints_the_recorded_engine_result(stores: dict, run_cli: Any) -> None:
    """`kbqa compile --format json` prints what `Engine.compile` gave for the same text when it was recorded."""
    want = json.loads(GOLDEN.read_text(encoding="utf-8"))
    for spec in [s for s in DESQ if s["file"] in CLI_ASK]:
        code, stdout, _ = run_cli("compile", FIXTURES / "desq_real" / spec["file"], "--store", stores[spec["store"]],
                                  "--format", "json")
        got = normalise(json.loads(stdout), str(stores[spec["store"]].parent))
        assert normalise(got, "") == want[f"compile/{spec['file']}"], spec["file"]
        assert code == want[f"compile/{spec['file']}"]["exit_code"]


def test_results_equal_the_golden_file(stores: dict, replays: dict[str, Path], run_cli: Any) -> None:
    tmp_roots = {str(p.parent) for p in (*stores.values(), *replays.values())}
    got = collect(stores, replays, run_cli)
    for root in sorted(tmp_roots, key=len, reverse=True):
        got = normalise(got, root)
    got = normalise(got, "")
    if os.environ.get("KBQA_UPDATE_GOLDEN"):
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        lines = [f"{json.dumps(k)}: {json.dumps(got[k], ensure_ascii=False, sort_keys=True)}" for k in sorted(got)]
        GOLDEN.write_text("{\n" + ",\n".join(lines) + "\n}\n", encoding="utf-8")  # one Result a line
    want = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert sorted(got) == sorted(want)
    for key in want:
        assert got[key] == want[key], key
    # every Result JSON reads back into the same Result
    for key, value in want.items():
        d = value["result"] if key.startswith("cli-") else value
        assert normalise(Result.from_dict(d).to_dict(), "") == d, key
