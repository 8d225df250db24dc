"""The `hf` backend: a local transformers checkpoint (+ an optional peft LoRA adapter), generating on the CPU.

A model is a checkpoint folder, a registered GGUF model (converted once to safetensors next to the
GGUF: loading a GGUF into transformers takes about a minute, a converted folder about a second),
a GGUF path, or a Hugging Face repo id (when a network is there). GBNF grammars are not honoured
here (transformers has no grammar sampler); the parser and the repair loop catch malformed text.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from kb_dumps.stage_errors import TranslateError
from kbqa.backends.base import Backend, GenerateResult
from kbqa.backends.catalogue import MODELS, is_fetched, model_path, models_dir

if TYPE_CHECKING:
    from peft import PeftModel
    from transformers import BatchEncoding, PreTrainedModel, PreTrainedTokenizerBase

    from kbqa.settings import TranslatorSettings

    CausalLM = PreTrainedModel | PeftModel  # a checkpoint, or one with a LoRA adapter attached

log = logging.getLogger(__name__)

INSTALL_HINT = "the hf backend needs torch, transformers, peft and gguf: pip install 'kbqa[train]'"
# Written into an adapter folder by `kbqa train`: the prompt layout the adapter was trained on.
ADAPTER_META = "kbqa_adapter.json"


def hf_available() -> bool:
    try:
        import peft  # noqa: F401
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError:
        return False
    return True


def cpu_bf16() -> bool:
    """Whether this CPU computes bf16 natively (AVX512-BF16 or AMX); elsewhere bf16 is emulated and slow."""
    import torch

    cpu = getattr(torch, "cpu", None)
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(bool(getattr(cpu, c, lambda: False)()) for c in checks)


def convert_gguf(gguf: str | Path, out_dir: str | Path) -> Path:
    """Dequantise a GGUF into a safetensors checkpoint folder (tokenizer included); done once per model."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf, out_dir = Path(gguf), Path(out_dir)
    if (out_dir / "config.json").is_file():
        return out_dir
    t0 = time.perf_counter()
    try:
        tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    except (OSError, ValueError, ImportError) as e:
        raise TranslateError(f"transformers could not read the GGUF {gguf}: {e}", file=str(gguf)) from None
    model.hf_quantizer = None  # the weights are dequantised already; save_pretrained must not re-quantise
    if getattr(model.config, "quantization_config", None) is not None:
        del model.config.quantization_config
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    tmp.replace(out_dir)
    log.info("converted %s to %s in %.0f s", gguf.name, out_dir, time.perf_counter() - t0)
    return out_dir


def checkpoint_for(ref: str, cache: str | Path | None = None) -> str:
    """A loadable checkpoint for a model reference: a registered name -> its converted folder (made once)."""
    if ref in MODELS:
        if not is_fetched(ref, cache):
            raise TranslateError(f"model {ref!r} is not in the cache; run `kbqa models fetch {ref}` first",
                                 stage="usage")
        return str(convert_gguf(model_path(ref, cache), models_dir(cache) / f"{ref}-hf"))
    if ref.endswith(".gguf") and Path(ref).is_file():
        return str(convert_gguf(ref, Path(ref).with_suffix("")))
    if not ref:
        raise TranslateError("no model given: a checkpoint folder, a registered model or a repo id", stage="usage")
    return ref


def rewrite_for_adapter(messages: list[dict[str, str]], system: str) -> list[dict[str, str]]:
    """The adapter's prompt layout: its system text, no few-shot turns, then the question (and any repair turn)."""
    last_q = max((i for i, m in enumerate(messages) if m.get("role") == "user"
                  and m.get("content", "").startswith("Question:")), default=None)
    if last_q is None:
        return messages
    return [{"role": "system", "content": system}, *messages[last_q:]]


class HFBackend(Backend):
    """A transformers causal LM on the CPU; `adapter` is a peft LoRA folder (e.g. from `kbqa train`)."""

    name = "hf"

    def __init__(self, model: str | Path, adapter: str | Path | None = None, *, dtype: str = "float32",
                 threads: int | None = None, system: str | None = None):
        self.model = str(model)
        self.adapter = str(adapter) if adapter else None
        self.dtype = dtype
        self.threads = threads
        self._tok: PreTrainedTokenizerBase | None = None
        self._lm: CausalLM | None = None
        # the prompt layout: the adapter's training system prompt, or `system` to give a base model the same
        self._system: str | None = system
        self._lock = threading.Lock()
        self.load_seconds = 0.0

    @classmethod
    def from_settings(cls, s: TranslatorSettings) -> HFBackend:
        if not hf_available():  # said when the engine is made, not at the first question
            raise TranslateError(INSTALL_HINT, stage="usage")
        return cls(s.model, getattr(s, "adapter", None) or None, threads=getattr(s, "n_threads", None) or None)

    def _load(self) -> tuple[PreTrainedTokenizerBase, CausalLM]:
        if self._lm is not None:
            return self._tok, self._lm
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError:
            raise TranslateError(INSTALL_HINT, stage="usage") from None
        if self.threads:
            torch.set_num_threads(self.threads)
        t0 = time.perf_counter()
        ref = checkpoint_for(self.model)
        try:
            tok = AutoTokenizer.from_pretrained(ref)
            lm = AutoModelForCausalLM.from_pretrained(ref, dtype=getattr(torch, self.dtype))
        except (OSError, ValueError) as e:
            raise TranslateError(f"transformers could not load {ref}: {e}", file=ref) from None
        if self.adapter:
            lm = self._attach_adapter(lm)
        lm.eval()  # torch: inference mode (not Python eval)
        self._tok, self._lm = tok, lm
        self.load_seconds = time.perf_counter() - t0
        return tok, lm

    def _attach_adapter(self, lm: PreTrainedModel) -> PeftModel:
        try:
            from peft import PeftModel
        except ImportError:
            raise TranslateError(INSTALL_HINT, stage="usage") from None
        folder = Path(self.adapter or "")
        if not (folder / "adapter_config.json").is_file():
            raise TranslateError(f"{folder} is not a LoRA adapter folder (no adapter_config.json)", stage="usage",
                                 file=str(folder))
        meta = folder / ADAPTER_META
        if meta.is_file() and self._system is None:
            self._system = json.loads(meta.read_text(encoding="utf-8")).get("system") or None
        return PeftModel.from_pretrained(lm, str(folder))

    def encode(self, prompt: str | list[dict[str, str]]) -> BatchEncoding:
        """Token ids for a prompt: chat messages through the model's chat template, a string as is."""
        tok, _ = self._load()
        if isinstance(prompt, str) or not getattr(tok, "chat_template", None):
            text = prompt if isinstance(prompt, str) else "\n\n".join(m["content"] for m in prompt) + "\n\n"
            return tok(text, return_tensors="pt")
        messages = list(prompt)
        if self._system:
            messages = rewrite_for_adapter(messages, self._system)
        return tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)

    def prompt_text(self, prompt: str | list[dict[str, str]]) -> str:
        """The prompt as the model sees it (chat template and adapter layout applied): for reports and debugging."""
        tok, _ = self._load()
        return tok.decode(self.encode(prompt)["input_ids"][0])

    def generate(self, prompt: str | list[dict[str, str]], grammar: str | None = None, max_tokens: int = 512,
                 temperature: float = 0.0, stop: list[str] | None = None) -> GenerateResult:
        tok, lm = self._load()  # first: without torch it says how to install it (a usage error)
        import torch

        enc = self.encode(prompt)
        n_in = int(enc["input_ids"].shape[1])
        kwargs: dict[str, int | float | bool | list[str] | PreTrainedTokenizerBase | None] = {"max_new_tokens": max_tokens, "pad_token_id": tok.pad_token_id or tok.eos_token_id}
        if temperature > 0:
            kwargs.update(do_sample=True, temperature=temperature)
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        if stop:
            kwargs.update(stop_strings=list(stop), tokenizer=tok)
        with self._lock, torch.inference_mode():
            t0 = time.perf_counter()
            try:
                out = lm.generate(**enc, **kwargs)
            except (RuntimeError, ValueError) as e:
                raise TranslateError(f"transformers failed while generating: {e}") from None
            seconds = time.perf_counter() - t0
        new = out[0, n_in:]
        text = tok.decode(new, skip_special_tokens=True)
        if stop:
            cut = [text.find(s) for s in stop if s in text]
            text = text[:min(cut)] if cut else text
        n_out = int(new.shape[0])
        finish = "length" if n_out >= max_tokens else "stop"
        label = Path(self.model).name + (f"+{Path(self.adapter).name}" if self.adapter else "")
        return GenerateResult(text, n_in, n_out, seconds, self.name, label, finish)

    def close(self) -> None:
        with self._lock:
            self._lm = self._tok = None
