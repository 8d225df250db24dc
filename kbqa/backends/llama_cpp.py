"""The `llama-cpp` backend: a GGUF model in-process through llama-cpp-python, with GBNF-constrained decoding.

llama-cpp-python is an optional extra built by `scripts/install_llama_cpp.sh` (portable CPU build).
A model is a registered name (`kbqa models fetch NAME`), a GGUF path, or a Hugging Face repo id
(`org/repo` or `org/repo:file-pattern.gguf`, downloaded by llama-cpp-python when a network is there).
"""

from __future__ import annotations

import ctypes
import logging
import math
import os
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from kb_dumps.stage_errors import TranslateError
from kbqa.backends.base import Backend, GenerateResult
from kbqa.backends.catalogue import resolve_model

if TYPE_CHECKING:
    import numpy as np
    from llama_cpp import Llama, LlamaGrammar, llama_vocab_p
    from numpy.typing import NDArray

    from kbqa.settings import TranslatorSettings

log = logging.getLogger(__name__)

INSTALL_HINT = "llama-cpp-python is not installed; build it with scripts/install_llama_cpp.sh"
DEFAULT_N_CTX = 4096
# Quantised GGUF of a repo when only `org/repo` is given.
DEFAULT_REPO_PATTERN = "*q4_k_m.gguf"


def _import_llama() -> ModuleType:
    try:
        import llama_cpp
    except ImportError:
        raise TranslateError(INSTALL_HINT, stage="usage") from None
    return llama_cpp


def compile_grammar(text: str) -> LlamaGrammar:
    """A GBNF text as a LlamaGrammar (llama-cpp-python parses it only when sampling: see `GrammarMatcher`)."""
    llama_cpp = _import_llama()
    return llama_cpp.LlamaGrammar.from_string(text, verbose=False)


class GrammarMatcher:
    """llama.cpp's own grammar sampler over a model's vocabulary, driven token by token.

    The same code that constrains generation decides here whether a text is admitted: each token
    of the text must survive the grammar's filtering, and at the end the end-of-generation token
    must be allowed. A grammar llama.cpp cannot parse is a TranslateError (never a crash later).
    """

    def __init__(self, llm: Llama, grammar: str, root: str = "root"):
        self._c = _import_llama()
        self._llm = llm
        self._ptr = self._c.llama_sampler_init_grammar(llm._model.vocab, grammar.encode("utf-8"), root.encode())
        if not self._ptr:
            raise TranslateError("llama.cpp cannot parse the grammar (its log above names the rule)", stage="usage")

    def allowed(self, tokens: list[int]) -> list[bool]:
        """Which of `tokens` the grammar allows next (llama.cpp sets the logit of the others to -inf)."""
        c = self._c
        data = (c.llama_token_data * len(tokens))(*[c.llama_token_data(t, 0.0, 0.0) for t in tokens])
        arr = c.llama_token_data_array(data, len(tokens), -1, False)
        c.llama_sampler_apply(self._ptr, ctypes.byref(arr))
        return [math.isfinite(data[i].logit) for i in range(len(tokens))]

    def accept(self, token: int) -> None:
        self._c.llama_sampler_accept(self._ptr, token)

    def admits(self, text: str) -> tuple[bool, int]:
        """(whether the grammar admits `text` in full, characters accepted before the first refused token)."""
        accepted = 0
        for tok in self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False):
            if not self.allowed([tok])[0]:
                return False, accepted
            self.accept(tok)
            accepted += len(self._llm.detokenize([tok]).decode("utf-8", "replace"))
        return self.allowed([self._llm.token_eos()])[0], accepted

    def close(self) -> None:
        if self._ptr:
            self._c.llama_sampler_free(self._ptr)
            self._ptr = None

    def __enter__(self) -> GrammarMatcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LlamaCppBackend(Backend):
    """A loaded GGUF model. One generation at a time (a llama.cpp context is not re-entrant)."""

    name = "llama-cpp"

    def __init__(self, model: str | Path, *, n_ctx: int = DEFAULT_N_CTX, n_threads: int | None = None,
                 n_batch: int = 512, seed: int = 0, chat_format: str | None = None, verbose: bool = False):
        self.model = str(model)
        self.n_ctx = n_ctx
        self.n_threads = n_threads or max(1, os.cpu_count() or 1)
        self.n_batch = n_batch
        self.seed = seed
        self.chat_format = chat_format
        self.verbose = verbose
        self._llm: Llama | None = None
        self._grammars: dict[str, LlamaGrammar] = {}
        self._lock = threading.Lock()
        self.load_seconds = 0.0
        self.last_prefix_tokens = 0  # prompt tokens of the last constrained request served from the KV cache

    @classmethod
    def from_settings(cls, s: TranslatorSettings) -> LlamaCppBackend:
        # n_ctx / n_threads are read when the settings declare them (KBQA_N_CTX, KBQA_N_THREADS)
        return cls(s.model, n_ctx=int(getattr(s, "n_ctx", 0) or DEFAULT_N_CTX),
                   n_threads=getattr(s, "n_threads", None) or None)

    # ---- loading ---------------------------------------------------------------------------
    def _load(self) -> Llama:
        if self._llm is not None:
            return self._llm
        llama_cpp = _import_llama()
        ref = resolve_model(self.model)
        kwargs: dict[str, int | bool | str] = {"n_ctx": self.n_ctx, "n_threads": self.n_threads,
                                  "n_threads_batch": self.n_threads, "n_batch": self.n_batch, "seed": self.seed,
                                  "verbose": self.verbose}
        if self.chat_format:
            kwargs["chat_format"] = self.chat_format
        t0 = time.perf_counter()
        try:
            if Path(ref).is_file():
                self._llm = llama_cpp.Llama(model_path=ref, **kwargs)
            elif _looks_like_repo(ref):
                repo, _, pattern = ref.partition(":")
                self._llm = llama_cpp.Llama.from_pretrained(repo_id=repo, filename=pattern or DEFAULT_REPO_PATTERN,
                                                            **kwargs)
            else:
                raise TranslateError(f"model {ref!r} is neither a GGUF file, a registered model (`kbqa models "
                                     "list`) nor a Hugging Face repo id (org/repo)", stage="usage")
        except TranslateError:
            raise
        except (ValueError, RuntimeError, OSError) as e:
            raise TranslateError(f"llama.cpp could not load {ref}: {e}", file=ref) from None
        except ImportError as e:  # from_pretrained needs huggingface_hub
            raise TranslateError(f"cannot fetch {ref} from the Hugging Face hub: {e}", stage="usage") from None
        self.load_seconds = time.perf_counter() - t0
        log.info("loaded %s in %.1f s (%d threads, n_ctx %d)", ref, self.load_seconds, self.n_threads, self.n_ctx)
        return self._llm

    def grammar(self, text: str) -> LlamaGrammar:
        """A grammar checked once by llama.cpp's parser (a bad one would otherwise fail inside sampling)."""
        if text not in self._grammars:
            GrammarMatcher(self._load(), text).close()
            self._grammars[text] = compile_grammar(text)
        return self._grammars[text]

    def matcher(self, grammar: str) -> GrammarMatcher:
        """A fresh grammar matcher over this model's vocabulary (close it, or use it as a context manager)."""
        return GrammarMatcher(self._load(), grammar)

    def tokenize(self, text: str) -> list[int]:
        return list(self._load().tokenize(text.encode("utf-8"), add_bos=False, special=False))

    # ---- the interface ---------------------------------------------------------------------
    def generate(self, prompt: str | list[dict[str, str]], grammar: str | None = None, max_tokens: int = 512,
                 temperature: float = 0.0, stop: list[str] | None = None) -> GenerateResult:
        self._load()
        if grammar:
            self.grammar(grammar)  # a grammar llama.cpp cannot parse is refused before any decoding
        with self._lock:
            t0 = time.perf_counter()
            try:
                if grammar:
                    text, n_in, n_out, finish = self._generate_constrained(prompt, grammar, max_tokens, temperature,
                                                                           list(stop or []))
                else:
                    text, n_in, n_out, finish = self._generate_plain(prompt, max_tokens, temperature, list(stop or []))
            except ValueError as e:  # e.g. the prompt does not fit the context window
                raise TranslateError(f"llama.cpp refused the request: {e} (n_ctx {self.n_ctx})") from None
            except RuntimeError as e:
                raise TranslateError(f"llama.cpp failed while generating: {e}") from None
            seconds = time.perf_counter() - t0
        return GenerateResult(text, n_in, n_out, seconds, self.name, Path(self.model).name, finish)

    def _generate_plain(self, prompt: str | list[dict[str, str]], max_tokens: int, temperature: float,
                        stop: list[str]) -> tuple[str, int, int, str | None]:
        llm = self._llm
        common: dict[str, int | float | list[str]] = {"max_tokens": max_tokens, "temperature": temperature, "stop": stop, "seed": self.seed}
        if isinstance(prompt, str):
            out = llm.create_completion(prompt, **common)
            text = out["choices"][0]["text"]
        else:
            out = llm.create_chat_completion(messages=list(prompt), **common)
            text = out["choices"][0]["message"]["content"] or ""
        usage = out.get("usage") or {}
        return (text, int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)),
                out["choices"][0].get("finish_reason"))

    def prompt_tokens(self, prompt: str | list[dict[str, str]]) -> tuple[list[int], list[str]]:
        """Token ids of a prompt (chat messages through the model's own chat template) and its stop strings."""
        llm = self._load()
        if isinstance(prompt, str):
            return list(llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=False)), []
        from llama_cpp import llama_chat_format

        template = llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise TranslateError(f"{self.model} has no chat template; give a plain text prompt", stage="usage")
        vocab = llm._model
        fmt = llama_chat_format.Jinja2ChatFormatter(template, vocab.token_get_text(llm.token_eos()),
                                                    vocab.token_get_text(llm.token_bos()))
        resp = fmt(messages=list(prompt))
        stops = resp.stop if isinstance(resp.stop, list) else [resp.stop] if resp.stop else []
        return list(llm.tokenize(resp.prompt.encode("utf-8"), add_bos=True, special=True)), stops

    def _generate_constrained(self, prompt: str | list[dict[str, str]], grammar: str, max_tokens: int,
                              temperature: float, stop: list[str]) -> tuple[str, int, int, str]:
        """Grammar-constrained decoding that asks the grammar about the best tokens first.

        llama-cpp-python applies the grammar to the whole vocabulary at every step (151k tokens
        for Qwen: about a second a token here); like llama.cpp's own sampler, we check the
        model's preferred tokens first and filter the whole vocabulary only when all are refused.
        """
        import numpy as np

        llm = self._llm
        tokens, template_stops = self.prompt_tokens(prompt)
        if len(tokens) >= self.n_ctx:
            raise ValueError(f"the prompt has {len(tokens)} tokens, more than the context window")
        stops = [s for s in [*stop, *template_stops] if s]
        self.last_prefix_tokens = _reuse_prefix(llm, tokens)
        llm.eval(tokens[self.last_prefix_tokens:])  # llama.cpp: feed prompt tokens to the model (not Python eval)
        rng = np.random.default_rng(self.seed)
        vocab_ptr = llm._model.vocab
        n_vocab = llm.n_vocab()
        out: list[int] = []
        text_bytes = b""
        finish = "length"
        with GrammarMatcher(llm, grammar) as matcher:
            for _ in range(max_tokens):
                if len(tokens) + len(out) >= self.n_ctx:
                    break
                # the last position's logits (llama-cpp-python keeps no copy unless logits_all)
                logits = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(n_vocab,)).astype(np.float64)
                tok = _pick(matcher, logits, temperature, rng)
                if tok is None or self._c_is_eog(vocab_ptr, tok):
                    finish = "stop"
                    break
                matcher.accept(tok)
                out.append(tok)
                text_bytes += llm.detokenize([tok], prev_tokens=tokens + out[:-1])
                text = text_bytes.decode("utf-8", "ignore")
                if any(s in text for s in stops):
                    finish = "stop"
                    break
                llm.eval([tok])
        text = text_bytes.decode("utf-8", "replace")
        for s in stops:
            if s in text:
                text = text[:text.index(s)]
        return text, len(tokens), len(out), finish

    @staticmethod
    def _c_is_eog(vocab_ptr: llama_vocab_p, tok: int) -> bool:
        import llama_cpp

        return bool(llama_cpp.llama_vocab_is_eog(vocab_ptr, tok))

    def close(self) -> None:
        with self._lock:
            if self._llm is not None and hasattr(self._llm, "close"):
                self._llm.close()
            self._llm = None


# Candidates asked of the grammar before it filters the whole vocabulary.
_FIRST_CANDIDATES = (1, 32, 1024)


def _pick(matcher: GrammarMatcher, logits: NDArray[np.float64], temperature: float,
          rng: np.random.Generator) -> int | None:
    """The next token: greedy (temperature 0) or sampled from the top 40, among tokens the grammar allows."""
    import numpy as np

    order = np.argsort(-logits)
    sizes = _FIRST_CANDIDATES if temperature <= 0 else _FIRST_CANDIDATES[1:]  # sampling needs a choice
    for n in (*sizes, len(order)):
        head = order[:n].tolist()
        allowed = [t for t, ok in zip(head, matcher.allowed(head), strict=True) if ok]
        if not allowed:
            continue
        if temperature <= 0:
            return int(allowed[0])
        top = np.array(allowed[:40])
        z = logits[top] / temperature
        p = np.exp(z - z.max())
        return int(rng.choice(top, p=p / p.sum()))
    return None  # nothing allowed: the grammar is complete only at the end of generation


def _reuse_prefix(llm: Llama, tokens: list[int]) -> int:
    """Keep the KV cache of the longest prefix the previous request shares with `tokens`, so that a prompt's fixed
    instructions are computed once (llama-cpp-python's own `generate` does the same; our constrained loop feeds
    tokens itself). The last prompt token is always fed again: its logits start the generation. Returns the
    tokens kept (0: the context was reset)."""
    n = 0
    if not (getattr(llm, "_is_recurrent", False) or getattr(llm, "_is_hybrid", False)):
        for a, b in zip(llm.input_ids[:llm.n_tokens].tolist(), tokens[:-1], strict=False):
            if a != b:
                break
            n += 1
    if n == 0 or not llm._ctx.kv_cache_seq_rm(-1, n, -1):
        llm.reset()
        return 0
    llm.n_tokens = n
    return n


def _looks_like_repo(ref: str) -> bool:
    head = ref.partition(":")[0]
    return head.count("/") == 1 and not head.startswith((".", "/")) and not Path(head).exists()
