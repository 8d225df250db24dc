"""The llama-cpp backend and the DeSQ GBNF grammar, through llama.cpp's own grammar sampler, on SmolLM2-135M.

Also the `openai` backend against a real `python -m llama_cpp.server` on 127.0.0.1 (grammar
pass-through, a read timeout, a server that is down). Skipped where llama-cpp-python is not built
(scripts/install_llama_cpp.sh) or the SmolLM2 weights cannot be fetched.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from kbqa.frontends.desq import parse_desq
from kbqa.translators.base import TranslateError
from kbqa.translators.grammars import DesqBounds, desq_grammar, grammar_for
from kbqa.translators.prompts import build_prompt

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not built here (scripts/install_llama_cpp.sh)")

from kbqa.backends.llama_cpp import LlamaCppBackend  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"
# Small bounds: a model that loops (SmolLM2 does) still reaches the end of the grammar in a few hundred tokens.
TIGHT = DesqBounds(acs=3, grounding=3, items=2, text=40, label=24, description=40, expr_depth=2, group_depth=2,
                   path_depth=2)
# What each line may look like, by section (a fragment may continue on lines that do not start a new AC).
SECTION_LINE = {
    None: re.compile(r"FORMAT desq/1"),
    "ATOMIC CONSTRAINTS": re.compile(r"AC[1-9][0-9]?: \S.*"),
    "FRAGMENTS": re.compile(r"AC[1-9][0-9]? => \S.*|(?!AC[0-9]).*\S.*"),
    "GROUNDING": re.compile(r"\[[A-Za-z_][A-Za-z0-9_]*\] (entity|property|class) \| [^|]*\S[^|]* \| [^|]*( \| \S+)?"),
}
MALFORMED = {  # refused by the grammar and by the parser
    "no grounding section": "ATOMIC CONSTRAINTS\nAC1: x\nFRAGMENTS\nAC1 => SELECT ?var1\n",
    "label in a placeholder": "ATOMIC CONSTRAINTS\nAC1: x\nFRAGMENTS\nAC1 => SELECT ?var1\n"
                              "AC2 => [sasha] [place of birth] ?var1 .\nGROUNDING\n",
    "unknown kind": "ATOMIC CONSTRAINTS\nAC1: x\nFRAGMENTS\nAC1 => SELECT ?var1\nGROUNDING\n[a] thing | A | d\n",
    "unknown prefix": "ATOMIC CONSTRAINTS\nAC1: x\nFRAGMENTS\nAC1 => SELECT ?var1\nAC2 => ?var1 foo:bar ?var2 .\n"
                      "GROUNDING\n",
    "unbalanced brace": "ATOMIC CONSTRAINTS\nAC1: x\nFRAGMENTS\nAC1 => SELECT ?var1\n"
                        "AC2 => OPTIONAL { ?var1 [p] ?var2 .\nGROUNDING\n[p] property | p | d\n",
    "wrong arity": "ATOMIC CONSTRAINTS\nAC1: x\nFRAGMENTS\nAC1 => SELECT ?var1\nAC2 => FILTER(CONTAINS(?var1))\n"
                   "GROUNDING\n",
    "SERVICE": "ATOMIC CONSTRAINTS\nAC1: x\nFRAGMENTS\nAC1 => SELECT ?var1\n"
               "AC2 => SERVICE <http://x.org/sparql> { ?var1 [p] ?var2 . }\nGROUNDING\n[p] property | p | d\n",
    "two query forms": "ATOMIC CONSTRAINTS\nAC1: x\nFRAGMENTS\nAC1 => SELECT ?var1 ASK\nGROUNDING\n",
    "SELECT without variables": "ATOMIC CONSTRAINTS\nAC1: x\nFRAGMENTS\nAC1 => SELECT\nGROUNDING\n",
    "variable read as a projection": "ATOMIC CONSTRAINTS\nAC1: x\nFRAGMENTS\nAC1 => SELECT ?var1 ?var1 [p] ?var2\n"
                                     "GROUNDING\n[p] property | p | d\n",
    "unreadable guessed URI": "ATOMIC CONSTRAINTS\nAC1: x\nFRAGMENTS\nAC1 => SELECT ?var1\nAC2 => [a] [p] ?var1 .\n"
                              "GROUNDING\n[a] entity | A | d | not a uri\n[p] property | p | d\n",
    "empty label": "ATOMIC CONSTRAINTS\nAC1: x\nFRAGMENTS\nAC1 => SELECT ?var1\nAC2 => [a] [p] ?var1 .\n"
                   "GROUNDING\n[a] entity |  | d\n[p] property | p | d\n",
}
NON_CANONICAL = {  # the parser tolerates these; the grammar makes the model write the canonical form
    "code fence": "```\nATOMIC CONSTRAINTS\nAC1: x\nFRAGMENTS\nAC1 => SELECT ?var1\nGROUNDING\n```\n",
    "lowercase header": "atomic constraints:\nAC1: x\nFRAGMENTS\nAC1 => SELECT ?var1\nGROUNDING\n",
    "nesting past the bound": "ATOMIC CONSTRAINTS\nAC1: x\nFRAGMENTS\nAC1 => SELECT ?var1\n"
                              "AC2 => FILTER(((((((((?var1 > 1)))))))))\nGROUNDING\n",
}


def _few_shot() -> list[tuple[str, str]]:
    data = json.loads((FIXTURES / "desq_real" / "fixtures.json").read_text(encoding="utf-8"))
    return [(f["question"], (FIXTURES / "desq_real" / f["file"]).read_text(encoding="utf-8"))
            for f in data["fixtures"] if f["file"] == "w_sq_1.desq"]


def _assert_well_formed(text: str, *, complete: bool = True) -> None:
    """Every line fits its section; a complete text parses with no parse-stage error."""
    lines = text.split("\n")
    if not complete:
        lines = lines[:-1]  # the last line may be cut by max_tokens
    section = None
    for line in lines:
        if line in ("ATOMIC CONSTRAINTS", "FRAGMENTS", "GROUNDING"):
            section = line
        elif line:
            assert SECTION_LINE[section].fullmatch(line), f"line outside the format in {section}: {line!r}\n{text}"
    if complete:
        assert section == "GROUNDING", text
        res = parse_desq(text)
        assert not [e for e in res.errors if e.stage == "parse"], (res.errors, text)


def test_llama_cpp_refuses_a_bad_grammar(smollm2: LlamaCppBackend) -> None:
    with pytest.raises(TranslateError, match="cannot parse the grammar"):
        smollm2.grammar('root ::= "a" [')
    with pytest.raises(TranslateError):
        smollm2.matcher("root ::= undefined_rule")


def test_grammar_admits_the_design_examples_and_real_targets(smollm2: LlamaCppBackend) -> None:
    files = sorted((FIXTURES / "desq_real").glob("*.desq")) + [
        FIXTURES / "desq" / n for n in ("design_example.desq", "union.desq", "values.desq", "subquery.desq",
                                        "qualifier.desq", "path.desq", "minus.desq", "order_limit.desq")]
    for f in files:
        text = f.read_text(encoding="utf-8")
        with smollm2.matcher(desq_grammar()) as m:
            ok, at = m.admits(text)
        assert ok, f"{f.name} refused at character {at}: {text[at:at + 60]!r}"
        assert not [e for e in parse_desq(text).errors if e.stage == "parse"]
    assert grammar_for("desq") == desq_grammar() and grammar_for("no-such-frontend") is None


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_grammar_refuses_malformed_text(smollm2: LlamaCppBackend, name: str) -> None:
    text = MALFORMED[name]
    with smollm2.matcher(desq_grammar()) as m:
        ok, at = m.admits(text)
    assert not ok, name
    assert parse_desq(text).errors, f"the parser should refuse {name} too"


@pytest.mark.parametrize("name", sorted(NON_CANONICAL))
def test_grammar_refuses_non_canonical_text(smollm2: LlamaCppBackend, name: str) -> None:
    with smollm2.matcher(desq_grammar()) as m:
        assert not m.admits(NON_CANONICAL[name])[0]


def test_constrained_generation_parses(smollm2: LlamaCppBackend) -> None:
    """Generate through llama.cpp's sampler with the grammar: the text parses with no parse-stage error."""
    prompt = build_prompt("where was Angela Merkel born?", "desq", _few_shot())
    res = smollm2.generate(prompt.messages(), grammar=desq_grammar(TIGHT), max_tokens=500)
    assert res.finish_reason == "stop", res.text
    assert res.tokens_in > 100 and res.tokens_out > 10 and res.seconds > 0
    _assert_well_formed(res.text)


def test_default_grammar_never_writes_a_line_outside_the_format(smollm2: LlamaCppBackend) -> None:
    prompt = build_prompt("who directed Titanic?", "desq", _few_shot())
    res = smollm2.generate(prompt.messages(), grammar=desq_grammar(), max_tokens=80, temperature=0.8)
    _assert_well_formed(res.text, complete=res.finish_reason == "stop")
    unconstrained = smollm2.generate("Say hello.", max_tokens=8)
    assert unconstrained.tokens_out > 0  # a plain completion prompt works too


def test_translator_and_settings_wiring(smollm2: LlamaCppBackend) -> None:
    from kbqa.backends import BACKENDS
    from kbqa.settings import TranslatorSettings
    from kbqa.translators.model import ModelTranslator

    settings = TranslatorSettings(backend="llama-cpp", model=smollm2.model)
    assert isinstance(BACKENDS.get(settings.backend).make(settings), LlamaCppBackend)
    tr = ModelTranslator(smollm2, bank=None, max_tokens=40).translate("who wrote Dune?", qid="q1")
    assert tr.backend == "llama-cpp" and tr.tokens_in > 50 and tr.tokens_out > 0 and tr.details["grammar"]
    assert tr.text.startswith(("ATOMIC CONSTRAINTS", "FORMAT desq/1"))
    with pytest.raises(TranslateError) as err:
        LlamaCppBackend("qwen2.5-coder-1.5b-not-registered").generate("x")
    assert err.value.info.stage == "usage"


# ---- the openai backend against a real llama.cpp server ------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server(smollm2: LlamaCppBackend, tmp_path_factory: pytest.TempPathFactory) -> str:
    pytest.importorskip("uvicorn", reason="the llama.cpp server needs the [server] extra")
    port = _free_port()
    log = tmp_path_factory.mktemp("server") / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", smollm2.model, "--host",
                                 "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", "2"],
                                stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the llama.cpp server exited: {log.read_text(errors='replace')[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("the llama.cpp server did not start within 120 s")
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_openai_backend_against_a_real_llama_cpp_server(llama_server: str) -> None:
    from kbqa.backends.openai import OpenAIBackend

    backend = OpenAIBackend(llama_server, "smollm2", grammar_field="grammar", retries=0)
    prompt = build_prompt("where was Angela Merkel born?", "desq", _few_shot())
    res = backend.generate(prompt.messages(), grammar=desq_grammar(TIGHT), max_tokens=500)
    assert res.finish_reason == "stop" and not res.tokens_estimated and res.tokens_in > 100
    _assert_well_formed(res.text)  # the grammar went through the HTTP API to llama.cpp's sampler

    slow = OpenAIBackend(llama_server, "smollm2", timeout_s=0.05, retries=0)
    with pytest.raises(TranslateError, match="did not answer within") as err:
        slow.generate(prompt.messages(), max_tokens=30)
    assert err.value.info.stage == "translate"


def test_openai_backend_with_the_server_down() -> None:
    from kbqa.backends.openai import OpenAIBackend

    backend = OpenAIBackend(f"http://127.0.0.1:{_free_port()}/v1", retries=1, backoff_s=0.01)
    with pytest.raises(TranslateError, match="cannot reach") as err:
        backend.generate("hello")
    assert err.value.info.stage == "translate" and "2 attempt" in str(err.value)
