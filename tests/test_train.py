"""`kbqa train`: pairs, label masking, deterministic batches, a real LoRA run on SmolLM2 that learns and resumes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbqa.training.train import TrainConfig, batch_indices, load_pairs
from kbqa.translators.base import TranslateError

FIXTURES = Path(__file__).parent / "fixtures" / "desq_real"
pytest.importorskip("peft", reason="the hf extra (transformers, peft, gguf) is not installed")


def _fixture_pairs() -> list[tuple[str, str]]:
    data = json.loads((FIXTURES / "fixtures.json").read_text(encoding="utf-8"))
    return [(f["question"], (FIXTURES / f["file"]).read_text(encoding="utf-8")) for f in data["fixtures"]]


def _write_pairs(path: Path, pairs: list[tuple[str, str]]) -> Path:
    path.write_text("".join(json.dumps({"question": q, "target": t}) + "\n" for q, t in pairs), encoding="utf-8")
    return path


def test_batches_are_a_function_of_seed_and_step() -> None:
    n, bs = 10, 4
    first = [batch_indices(n, bs, s, seed=3) for s in range(5)]
    assert first == [batch_indices(n, bs, s, seed=3) for s in range(5)]  # what resuming relies on
    flat = [i for b in first for i in b]
    assert sorted(flat[:10]) == list(range(10)) and sorted(flat[10:20]) == list(range(10))  # whole epochs
    assert flat[:10] != flat[10:20]  # each epoch reshuffled
    assert first != [batch_indices(n, bs, s, seed=4) for s in range(5)]


def test_pairs_from_file_with_exclusions(tmp_path: Path) -> None:
    pairs = _fixture_pairs()
    f = _write_pairs(tmp_path / "pairs.jsonl", pairs)
    cfg = TrainConfig(base="x", out=str(tmp_path / "a"), pairs_file=str(f), exclude_questions=[pairs[0][0].upper()])
    got = load_pairs(cfg)
    assert len(got) == len(pairs) - 1 and pairs[0][0] not in {q for q, _ in got}
    (tmp_path / "bad.jsonl").write_text('{"question": "q"}\n')
    with pytest.raises(TranslateError, match="target"):
        load_pairs(TrainConfig(base="x", out="o", pairs_file=str(tmp_path / "bad.jsonl")))
    with pytest.raises(TranslateError, match="--store"):
        load_pairs(TrainConfig(base="x", out="o"))


def test_loss_is_on_the_answer_only(smollm2_checkpoint: str) -> None:
    from transformers import AutoTokenizer

    from kbqa.training.train import encode_pair

    tok = AutoTokenizer.from_pretrained(smollm2_checkpoint)
    ids, labels = encode_pair(tok, "who wrote Dune?", "ATOMIC CONSTRAINTS\nAC1: x")
    assert len(ids) == len(labels)
    answer = [t for t in labels if t != -100]
    assert tok.decode(answer[:-1]) == "ATOMIC CONSTRAINTS\nAC1: x" and answer[-1] == tok.eos_token_id
    assert labels[: len(ids) - len(answer)] == [-100] * (len(ids) - len(answer))
    assert "who wrote Dune?" in tok.decode(ids[: len(ids) - len(answer)])


@pytest.mark.slow
def test_lora_run_learns_resumes_and_loads_in_the_hf_backend(smollm2_checkpoint: str, tmp_path: Path) -> None:
    from kbqa.backends.hf import ADAPTER_META, HFBackend
    from kbqa.training.train import TRAIN_SYSTEM, train

    pairs = sorted(_fixture_pairs(), key=lambda p: len(p[1]))[:2]  # the two shortest: a quick step
    f = _write_pairs(tmp_path / "pairs.jsonl", pairs)
    out = tmp_path / "adapter"
    base = dict(base=smollm2_checkpoint, out=str(out), pairs_file=str(f), batch_size=2, lr=3e-3, warmup_steps=1,
                max_len=320, log_every=1, save_every=3, threads=2)
    first = train(TrainConfig(**base, max_steps=3), log=lambda s: None)
    assert first.steps == 3 and first.pairs == 2 and first.resumed_from == 0 and first.steps_per_s > 0
    assert (out / "checkpoint" / "state.json").is_file() and (out / "adapter_config.json").is_file()
    second = train(TrainConfig(**base, max_steps=6), log=lambda s: None)
    assert second.resumed_from == 3 and second.steps == 6
    steps = [s for s, _ in second.losses]
    assert steps == sorted(steps) and steps[-1] == 6
    # overfitting two examples: the loss falls
    assert second.losses[-1][1] < first.losses[0][1] * 0.8, second.losses
    meta = json.loads((out / ADAPTER_META).read_text())
    assert meta["system"] == TRAIN_SYSTEM and meta["result"]["steps"] == 6

    backend = HFBackend(smollm2_checkpoint, adapter=out, threads=2)
    messages = [{"role": "system", "content": "long few-shot prompt"}, {"role": "user", "content": "Question: a?"},
                {"role": "assistant", "content": "ex"}, {"role": "user", "content": f"Question: {pairs[0][0]}"}]
    prompt_text = backend.prompt_text(messages)
    assert TRAIN_SYSTEM in prompt_text and "long few-shot prompt" not in prompt_text  # the adapter's layout
    res = backend.generate(messages, max_tokens=8)
    assert res.tokens_out > 0 and res.model.endswith("+adapter")


def test_cli_train_with_a_pairs_file(run_cli, smollm2_checkpoint: str, tmp_path: Path) -> None:
    f = _write_pairs(tmp_path / "pairs.jsonl", sorted(_fixture_pairs(), key=lambda p: len(p[1]))[:1])
    code, out, _ = run_cli("train", "--base", smollm2_checkpoint, "--out", tmp_path / "a", "--pairs", f,
                           "--max-steps", "1", "--batch-size", "1", "--max-len", "512", "--format", "json")
    assert code == 0
    res = json.loads(out)
    assert res["steps"] == 1 and res["pairs"] >= 1 and res["first_loss"] > 0
    code, _, err = run_cli("train", "--base", smollm2_checkpoint, "--out", tmp_path / "b", "--pairs", f,
                           "--max-len", "8")
    assert code == 2 and "fits --max-len" in err
