"""`kbqa train`: LoRA fine-tuning (peft) of a small causal LM on case-bank pairs (question -> DeSQ), on the CPU.

A plain training loop rather than `transformers.Trainer`: every step is logged (loss, s/step) to
the console and `train_log.jsonl`, the run is resumable from `<out>/checkpoint/` (adapter weights,
optimizer state, step; the batch order is a pure function of seed and step), bf16 is used where
the CPU computes it natively, and gradient checkpointing keeps memory small. The result is a peft
adapter folder that the `hf` backend loads, plus `kbqa_adapter.json` naming the prompt layout.
"""

from __future__ import annotations

import json
import math
import random
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kb_dumps.stage_errors import TranslateError
from kbqa.backends.hf import ADAPTER_META, checkpoint_for, cpu_bf16

if TYPE_CHECKING:
    import torch
    from peft import PeftModel
    from transformers import BatchEncoding, PreTrainedTokenizerBase

# The adapter's prompt: short, because on a CPU every prompt token is paid at each step; the `hf`
# backend rewrites prompts to this layout when it loads an adapter carrying it.
TRAIN_SYSTEM = ("Translate the question into DeSQ: ATOMIC CONSTRAINTS, FRAGMENTS (ACn => SPARQL with [placeholders]), "
                "GROUNDING ([name] kind | label | description).")
DEFAULT_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj")


@dataclass
class TrainConfig:
    """One training run. `store` (its case bank) or `pairs_file` (JSONL of {question, target}) gives the pairs."""

    base: str
    out: str
    store: str | None = None
    pairs_file: str | None = None
    frontend: str = "desq"
    max_pairs: int | None = None
    exclude_questions: list[str] = field(default_factory=list)
    max_steps: int = 60
    batch_size: int = 8
    grad_accum: int = 1
    lr: float = 2e-4
    warmup_steps: int = 5
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    target_modules: tuple[str, ...] = DEFAULT_TARGETS
    max_len: int = 256  # tokens per example; longer examples are left out (counted), never cut
    seed: int = 0
    bf16: bool | None = None  # None: where the CPU supports it natively
    gradient_checkpointing: bool = True
    log_every: int = 5
    save_every: int = 20
    threads: int | None = None
    resume: bool = True

    def to_dict(self) -> dict:
        d = asdict(self)
        d["target_modules"] = list(self.target_modules)
        d["exclude_questions"] = len(self.exclude_questions)
        return d


@dataclass
class TrainResult:
    """What a run did, as plain data: loss curve, speed, where the adapter is."""

    adapter: str
    steps: int
    pairs: int
    dropped_long: int
    losses: list[tuple[int, float]]
    seconds: float
    steps_per_s: float
    tokens_per_step: float
    dtype: str
    resumed_from: int = 0

    @property
    def first_loss(self) -> float | None:
        return self.losses[0][1] if self.losses else None

    @property
    def last_loss(self) -> float | None:
        return self.losses[-1][1] if self.losses else None

    def to_dict(self) -> dict:
        return {**asdict(self), "first_loss": self.first_loss, "last_loss": self.last_loss}


# ---- data ----------------------------------------------------------------------------------------


def load_pairs(cfg: TrainConfig) -> list[tuple[str, str]]:
    """(question, target) pairs from the store's case bank or a JSONL file, minus excluded questions."""
    from grounding.text import normalize

    pairs: list[tuple[str, str]] = []
    if cfg.pairs_file:
        path = Path(cfg.pairs_file)
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                pairs.append((str(item["question"]), str(item["target"])))
            except (json.JSONDecodeError, KeyError, TypeError):
                raise TranslateError('each line needs "question" and "target"', stage="usage", file=str(path),
                                     line=lineno) from None
    elif cfg.store:
        from kbqa.translators.casebank import CaseBank, bank_dir

        folder = bank_dir(cfg.store)
        if not CaseBank.exists(folder):
            raise TranslateError(f"no case bank in {folder}; build it with `kbqa cases build --store {cfg.store}`",
                                 stage="usage")
        with open(folder / "cases.jsonl", encoding="utf-8") as f:
            for line in f:
                case = json.loads(line)
                target = case.get("targets", {}).get(cfg.frontend)
                if target:
                    pairs.append((case["question"], target))
    else:
        raise TranslateError("give the training pairs: --store DIR (its case bank) or --pairs FILE", stage="usage")
    skip = {normalize(q) for q in cfg.exclude_questions}
    pairs = [(q, t) for q, t in pairs if normalize(q) not in skip]
    random.Random(cfg.seed).shuffle(pairs)
    return pairs[:cfg.max_pairs] if cfg.max_pairs else pairs


def _ids(x: BatchEncoding | list[int]) -> list[int]:
    """Token ids from apply_chat_template, whichever shape this transformers version returns."""
    if hasattr(x, "keys") and "input_ids" in x:
        x = x["input_ids"]
    return [int(i) for i in x]


def encode_pair(tok: PreTrainedTokenizerBase, question: str, target: str, system: str = TRAIN_SYSTEM) -> tuple[list[int], list[int]]:
    """Input ids and labels for one pair: the loss is on the answer (and its end-of-turn) only."""
    messages = [{"role": "system", "content": system}, {"role": "user", "content": f"Question: {question}"}]
    prompt = _ids(tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True))
    answer = [int(i) for i in tok(target.strip(), add_special_tokens=False)["input_ids"]] + [int(tok.eos_token_id)]
    return prompt + answer, [-100] * len(prompt) + answer


def build_examples(tok: PreTrainedTokenizerBase, pairs: list[tuple[str, str]], max_len: int) -> tuple[list[tuple[list[int], list[int]]], int]:
    examples, dropped = [], 0
    for q, t in pairs:
        ids, labels = encode_pair(tok, q, t)
        if len(ids) > max_len:
            dropped += 1  # cut targets would teach the model to stop mid-format
            continue
        examples.append((ids, labels))
    return examples, dropped


def batch_indices(n: int, batch_size: int, step: int, seed: int) -> list[int]:
    """The example indices of a step: epochs are seeded shuffles, so a resumed run sees the same batches."""
    start = step * batch_size
    out = []
    for pos in range(start, start + batch_size):
        epoch, i = divmod(pos, n)
        order = list(range(n))
        random.Random(seed * 1_000_003 + epoch).shuffle(order)
        out.append(order[i])
    return out


def collate(examples: list[tuple[list[int], list[int]]], pad_id: int) -> dict[str, torch.Tensor]:
    import torch

    width = max(len(ids) for ids, _ in examples)
    ids = torch.full((len(examples), width), pad_id, dtype=torch.long)
    labels = torch.full((len(examples), width), -100, dtype=torch.long)
    mask = torch.zeros((len(examples), width), dtype=torch.long)
    for row, (x, y) in enumerate(examples):
        ids[row, :len(x)] = torch.tensor(x)
        labels[row, :len(y)] = torch.tensor(y)
        mask[row, :len(x)] = 1
    return {"input_ids": ids, "labels": labels, "attention_mask": mask}


# ---- the run ---------------------------------------------------------------------------------------


def _lr_factor(step: int, cfg: TrainConfig) -> float:
    if step < cfg.warmup_steps:
        return (step + 1) / max(1, cfg.warmup_steps)
    span = max(1, cfg.max_steps - cfg.warmup_steps)
    return max(0.0, 1.0 - (step - cfg.warmup_steps) / span) * 0.9 + 0.1


def train(cfg: TrainConfig, log: Callable[[str], None] = lambda s: print(s, file=sys.stderr)) -> TrainResult:
    """Run (or resume) LoRA training; returns the loss curve and speed. Errors are TranslateError."""
    try:
        import torch
        from peft import LoraConfig, get_peft_model, set_peft_model_state_dict
        from safetensors.torch import load_file
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError:
        raise TranslateError("kbqa train needs torch, transformers, peft: pip install 'kbqa[hf]'", stage="usage") from None
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    out = Path(cfg.out)
    ckpt = out / "checkpoint"
    base = checkpoint_for(cfg.base)
    tok = AutoTokenizer.from_pretrained(base)
    pad_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    pairs = load_pairs(cfg)
    examples, dropped = build_examples(tok, pairs, cfg.max_len)
    if not examples:
        raise TranslateError(f"no training example fits --max-len {cfg.max_len} ({len(pairs)} pairs)", stage="usage")
    use_bf16 = cpu_bf16() if cfg.bf16 is None else cfg.bf16
    dtype = torch.bfloat16 if use_bf16 else torch.float32
    log(f"{len(examples)} examples ({dropped} longer than {cfg.max_len} tokens left out); base {base}; "
        f"{'bf16' if use_bf16 else 'float32'}; {torch.get_num_threads()} threads")
    model = AutoModelForCausalLM.from_pretrained(base, dtype=dtype)
    model.config.use_cache = False
    if cfg.gradient_checkpointing:
        try:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        except TypeError:  # transformers 5.x renamed it (activation checkpointing) and dropped the kwargs
            model.gradient_checkpointing_enable()
        model.enable_input_require_grads()
    lora = LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                      target_modules=list(cfg.target_modules), task_type="CAUSAL_LM")
    model = get_peft_model(model, lora)  # adapter weights are float32 even over a bf16 base
    params = [p for p in model.parameters() if p.requires_grad]
    optim = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=0.0)
    step, losses = 0, []
    if cfg.resume and (ckpt / "state.json").is_file():
        state = json.loads((ckpt / "state.json").read_text(encoding="utf-8"))
        set_peft_model_state_dict(model, load_file(str(ckpt / "adapter_model.safetensors")))
        optim.load_state_dict(torch.load(ckpt / "optimizer.pt", weights_only=True))  # tensors only: no pickle code
        step, losses = int(state["step"]), [tuple(x) for x in state["losses"]]
        log(f"resumed from step {step} ({ckpt})")
    for group in optim.param_groups:
        group["initial_lr"] = cfg.lr  # the schedule restarts at `step` on resume
    sched = torch.optim.lr_scheduler.LambdaLR(optim, lambda s: _lr_factor(s, cfg), last_epoch=step - 1)
    resumed_from = step
    model.train()
    out.mkdir(parents=True, exist_ok=True)
    log_file = open(out / "train_log.jsonl", "a", encoding="utf-8")
    t_start, window, tokens = time.perf_counter(), [], 0
    try:
        while step < cfg.max_steps:
            t0 = time.perf_counter()
            optim.zero_grad(set_to_none=True)
            step_loss = 0.0
            for micro in range(cfg.grad_accum):
                idx = batch_indices(len(examples), cfg.batch_size, step * cfg.grad_accum + micro, cfg.seed)
                batch = collate([examples[i] for i in idx], pad_id)
                tokens += int(batch["attention_mask"].sum())
                loss = model(**batch).loss / cfg.grad_accum
                value = float(loss.detach())
                if not math.isfinite(value):
                    raise TranslateError(f"the loss became {value} at step {step}; lower --lr", stage="usage")
                loss.backward()
                step_loss += value
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optim.step()
            sched.step()
            step += 1
            window.append(step_loss)
            dt = time.perf_counter() - t0
            if step % cfg.log_every == 0 or step == cfg.max_steps or step == resumed_from + 1:
                mean = sum(window) / len(window)
                losses.append((step, round(mean, 4)))
                window = []
                log(f"step {step}/{cfg.max_steps}  loss {mean:.4f}  lr {sched.get_last_lr()[0]:.2e}  {dt:.1f} s/step")
                log_file.write(json.dumps({"step": step, "loss": mean, "lr": sched.get_last_lr()[0],
                                           "seconds_per_step": dt}) + "\n")
                log_file.flush()
            if step % cfg.save_every == 0 and step < cfg.max_steps:
                _save_checkpoint(model, optim, ckpt, step, losses)
    finally:
        log_file.close()
    seconds = time.perf_counter() - t_start
    done = step - resumed_from
    model.save_pretrained(out)
    _save_checkpoint(model, optim, ckpt, step, losses)
    result = TrainResult(str(out), step, len(examples), dropped, losses, seconds, done / seconds if seconds else 0.0,
                         tokens / max(1, done), "bf16" if use_bf16 else "float32", resumed_from)
    meta = {"base": cfg.base, "system": TRAIN_SYSTEM, "frontend": cfg.frontend, "config": cfg.to_dict(),
            "result": result.to_dict()}
    (out / ADAPTER_META).write_text(json.dumps(meta, indent=1, ensure_ascii=False), encoding="utf-8")
    return result


def _save_checkpoint(model: PeftModel, optim: torch.optim.Optimizer, ckpt: Path, step: int, losses: list) -> None:
    import torch

    ckpt.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(ckpt)
    torch.save(optim.state_dict(), ckpt / "optimizer.pt")
    tmp = ckpt / "state.json.tmp"
    tmp.write_text(json.dumps({"step": step, "losses": losses}), encoding="utf-8")
    tmp.replace(ckpt / "state.json")  # written last: a half-written checkpoint is never resumed from
