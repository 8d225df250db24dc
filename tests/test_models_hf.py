"""The `hf` backend: SmolLM2-135M converted once from its GGUF to safetensors, generating on the CPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbqa.backends.hf import HFBackend, checkpoint_for, rewrite_for_adapter
from kbqa.translators.base import TranslateError

pytest.importorskip("transformers", reason="the hf extra (transformers, peft, gguf) is not installed")
pytest.importorskip("peft", reason="the hf extra (transformers, peft, gguf) is not installed")


def test_the_converted_checkpoint_is_a_plain_safetensors_folder(smollm2_checkpoint: str) -> None:
    folder = Path(smollm2_checkpoint)
    assert (folder / "config.json").is_file() and (folder / "model.safetensors").is_file()
    assert "quantization_config" not in (folder / "config.json").read_text()
    assert checkpoint_for("smollm2-135m") == smollm2_checkpoint  # no second conversion


def test_generate_with_chat_messages_and_stop(smollm2_checkpoint: str) -> None:
    backend = HFBackend(smollm2_checkpoint, threads=2)
    messages = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Name a colour."}]
    res = backend.generate(messages, max_tokens=12)
    assert res.backend == "hf" and res.tokens_in > 5 and 0 < res.tokens_out <= 12 and res.text.strip()
    assert res.finish_reason in ("stop", "length") and res.seconds > 0
    again = backend.generate(messages, max_tokens=12)
    assert again.text == res.text  # temperature 0 is greedy: the same text
    cut = backend.generate("1, 2, 3, 4, 5, 6,", max_tokens=20, stop=[" 9"])
    assert " 9" not in cut.text
    backend.close()


def test_errors_are_translate_errors(smollm2_checkpoint: str, tmp_path: Path) -> None:
    with pytest.raises(TranslateError, match="not a LoRA adapter"):
        HFBackend(smollm2_checkpoint, adapter=tmp_path).generate("x", max_tokens=1)
    with pytest.raises(TranslateError) as err:
        HFBackend("").generate("x")
    assert err.value.info.stage == "usage"


def test_settings_select_the_hf_backend(smollm2_checkpoint: str) -> None:
    from kbqa.backends import BACKENDS
    from kbqa.settings import TranslatorSettings

    settings = TranslatorSettings(backend="hf", model=smollm2_checkpoint)
    backend = BACKENDS.get(settings.backend).make(settings)
    assert isinstance(backend, HFBackend) and backend.model == smollm2_checkpoint


def test_adapter_prompt_layout_drops_few_shot_turns() -> None:
    messages = [{"role": "system", "content": "long"}, {"role": "user", "content": "Question: a"},
                {"role": "assistant", "content": "A"}, {"role": "user", "content": "Question: b"},
                {"role": "assistant", "content": "bad"}, {"role": "user", "content": "The answer above has..."}]
    got = rewrite_for_adapter(messages, "short")
    assert got == [{"role": "system", "content": "short"}, *messages[3:]]  # the repair turn is kept
    assert rewrite_for_adapter([{"role": "user", "content": "hi"}], "short") == [{"role": "user", "content": "hi"}]
