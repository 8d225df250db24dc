"""A model as chooser for `explore`: the question and the ranker's top-k candidates, verbalised as a numbered list,
go to a model backend (llama-cpp, openai, hf) that answers with one number (a one-token GBNF grammar where the
backend honours grammars). The fixed instructions come first, so a backend's prompt-prefix cache (llama.cpp's KV
cache, an OpenAI-compatible server's prompt cache) computes them once. The reply is data: one number is read
from it, nothing else; a failing model, a number out of range or a reply that is no number keeps the ranker's
pick, and `details["chooser"]` says so.
"""

from __future__ import annotations

import re
import time

from kb_dumps.json_types import JsonObject
from kb_dumps.stage_errors import KBQAError
from kbqa.backends.base import Backend
from kbqa.settings import TranslatorSettings

DEFAULT_K = 5

# Fixed: the same tokens open every request (the prefix a backend caches). Question and candidates follow.
INSTRUCTIONS = """You choose the reading of a question that a database query should answer.
You get a question and a numbered list of candidate readings; each reading lists the facts its query asks for.
Pick the reading that means exactly what the question asks: the same things, the same relations, the same
direction, the same kind of answer (a count for "how many", a yes/no for "is/are/does", the top item for
"most/highest"). Answer with the number of that reading only."""

_NUMBER = re.compile(r"\s*(\d{1,3})(?!\d)")


def choice_grammar(k: int) -> str:
    """GBNF for one number from 1 to k (k ≤ 9: one digit, one token)."""
    return f"root ::= [1-{k}]"


def chooser_messages(question: str, readings: list[str]) -> list[dict[str, str]]:
    """Chat messages: the fixed instructions (system), then the question and the numbered readings (user)."""
    listed = "\n".join(f"{i}. {text}" for i, text in enumerate(readings, 1))
    return [{"role": "system", "content": INSTRUCTIONS},
            {"role": "user", "content": f"Question: {question}\nReadings:\n{listed}\n"
                                        f"Number of the reading (1-{len(readings)}):"}]


def parse_choice(reply: str, k: int) -> int | None:
    """The number a reply starts with when it is between 1 and k; None otherwise (never evaluated as code)."""
    m = _NUMBER.match(reply or "")
    if not m:
        return None
    n = int(m.group(1))
    return n if 1 <= n <= k else None


class Chooser:
    """Picks one of the ranker's top-k candidates with a model backend; every failure keeps the ranker's pick."""

    def __init__(self, backend: Backend, *, k: int = DEFAULT_K, use_grammar: bool = True):
        if not 2 <= k <= 9:
            raise ValueError(f"the chooser shows 2 to 9 candidates (one digit), not {k}")
        self.backend, self.k, self.use_grammar = backend, k, use_grammar

    def choose(self, question: str, readings: list[str]) -> JsonObject:
        """What the model picked among `readings` (the ranker's order, best first) and which one is used: a dict
        with `used` (1-based), `pick` (the model's number, None when there was none), `ranker_pick` (1),
        `reply`, `seconds` and `fallback` (why the ranker's pick stays; None when the model's pick is used)."""
        readings = readings[:self.k]
        out: JsonObject = {"backend": self.backend.name, "model": getattr(self.backend, "model", ""),
                               "k": len(readings), "ranker_pick": 1, "pick": None, "used": 1, "reply": None,
                               "seconds": 0.0, "fallback": None}
        if len(readings) < 2:
            out["fallback"] = "one candidate: nothing to choose"
            return out
        t0 = time.perf_counter()
        try:
            res = self.backend.generate(chooser_messages(question, readings),
                                        grammar=choice_grammar(len(readings)) if self.use_grammar else None,
                                        max_tokens=1 if self.use_grammar else 4, temperature=0.0)
        except KBQAError as e:  # a model that fails never fails the question
            out.update(seconds=round(time.perf_counter() - t0, 4), fallback=f"the model failed: {e.info.message}")
            return out
        except Exception as e:  # noqa: BLE001 - a backend's own bug (a library error) is still not the question's
            out.update(seconds=round(time.perf_counter() - t0, 4),
                       fallback=f"the model failed: {type(e).__name__}: {e}")
            return out
        reply = res.text if isinstance(res.text, str) else ""
        pick = parse_choice(reply, len(readings))
        out.update(reply=reply[:40], pick=pick, used=pick or 1, seconds=round(time.perf_counter() - t0, 4),
                   tokens_in=res.tokens_in, prefix_cached=getattr(self.backend, "last_prefix_tokens", None))
        if pick is None:
            out["fallback"] = f"the reply {reply[:40]!r} is no number from 1 to {len(readings)}"
        return out

    def close(self) -> None:
        self.backend.close()


def make_chooser(settings: TranslatorSettings) -> Chooser | None:
    """The chooser `settings.explore_chooser` names (a model backend over `settings.model`), or None."""
    if not settings.explore_chooser:
        return None
    from kbqa.backends import BACKENDS

    backend = BACKENDS.get(settings.explore_chooser).make(settings)
    # llama.cpp honours the grammar (one token suffices); a server only through its request field; transformers
    # has no grammar sampler: without one the model gets a few tokens and the reply is read as text
    grammar = settings.explore_chooser == "llama-cpp" or (settings.explore_chooser == "openai"
                                                          and bool(settings.grammar_field))
    return Chooser(backend, k=settings.explore_chooser_k, use_grammar=grammar)
