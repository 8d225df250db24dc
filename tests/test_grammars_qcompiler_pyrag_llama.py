"""The QCompiler and PyRAG GBNF grammars through llama.cpp's own grammar sampler (SmolLM2-135M's vocabulary).

The same sampler code that constrains generation decides whether a text is admitted: the hand-written
multi-hop fixtures are admitted, malformed texts are refused, and text generated under each grammar
reads with the front-end's parser (no parse-stage error). Skipped where llama-cpp-python is not built
(scripts/install_llama_cpp.sh) or the SmolLM2 weights cannot be fetched.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from kbqa.frontends.pyrag import parse_pyrag
from kbqa.frontends.qcompiler_parse import parse_expression
from kbqa.translators.grammars import grammar_for
from kbqa.translators.grammars_qcompiler_pyrag import (
    PYRAG_GBNF,
    QCOMPILER_GBNF,
    pyrag_grammar,
    qcompiler_grammar,
)
from kbqa.translators.prompts import build_prompt

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not built here (scripts/install_llama_cpp.sh)")

from kbqa.backends.llama_cpp import LlamaCppBackend  # noqa: E402

CASES = json.loads((Path(__file__).parent / "fixtures" / "multihop" / "cases.json").read_text(encoding="utf-8"))["cases"]

MALFORMED_EXPRESSIONS = {
    "operator without spaces": "Who directed Titanic? *Where was {d} born?",
    "unclosed parenthesis": "(Who directed Titanic? + Who wrote Titanic?",
    "unclosed placeholder": "Who directed Titanic? * Where was {d born?",
    "two lines": "Who directed Titanic?\nWhere was {d} born?",
    "empty": "",
    "leading operator": "* Where was {d} born?",
}
MALFORMED_PROGRAMS = {
    "import": "import os\nfinal_answer = entity(\"x\")\n",
    "attribute call": "x = os.system(\"ls\")\nfinal_answer = x\n",
    "dunder escape": "final_answer = ().__class__.__bases__\n",
    "__import__": "final_answer = __import__(\"os\")\n",
    "open": "final_answer = open(\"/etc/passwd\")\n",
    "loop": "while True:\n    x = 1\nfinal_answer = x\n",
    "no final_answer": "x = entity(\"Titanic\")\n",
    "comprehension": "final_answer = [hop(x, \"p\") for x in y]\n",
}


def test_the_translators_use_these_grammars() -> None:
    assert grammar_for("qcompiler") == QCOMPILER_GBNF and grammar_for("pyrag") == PYRAG_GBNF


def test_fixture_expressions_and_programs_are_admitted(smollm2: LlamaCppBackend) -> None:
    expressions = [c["expression"] for c in CASES if c.get("expression")]
    # The grammar makes a model end with `final_answer = …`; fixtures that test slicing put statements after it.
    programs = [c["program"] for c in CASES
                if c.get("program") and c["program"].strip().splitlines()[-1].startswith("final_answer")]
    assert len(expressions) >= 20 and len(programs) >= 18
    for text in expressions:
        with smollm2.matcher(QCOMPILER_GBNF) as m:
            ok, at = m.admits(text)
        assert ok, f"refused at {at}: {text[at:at + 40]!r} in {text!r}"
        assert parse_expression(text).errors == []
    for text in programs:
        with smollm2.matcher(PYRAG_GBNF) as m:
            ok, at = m.admits(text)
        assert ok, f"refused at {at}: {text[at:at + 40]!r} in {text!r}"


# Each front-end's grammar, its own reader, and the texts both must refuse (QCompiler: malformed expressions;
# PyRAG: programs outside the subset).
REFUSED = {"qcompiler": (QCOMPILER_GBNF, parse_expression, MALFORMED_EXPRESSIONS),
           "pyrag": (PYRAG_GBNF, parse_pyrag, MALFORMED_PROGRAMS)}


@pytest.mark.parametrize(("frontend", "name"), [(fe, name) for fe, (_, _, texts) in REFUSED.items()
                                                for name in sorted(texts)])
def test_grammar_and_reader_refuse_malformed_texts(smollm2: LlamaCppBackend, frontend: str, name: str) -> None:
    grammar, read, texts = REFUSED[frontend]
    text = texts[name]
    with smollm2.matcher(grammar) as m:
        assert not m.admits(text)[0], name
    assert read(text).errors, f"the {frontend} reader should refuse {name} too"


def test_bounds_cut_runaway_output(smollm2: LlamaCppBackend) -> None:
    """A bounded grammar refuses what exceeds its bounds, so a looping sampler must stop."""
    long_leaf = "Who " * 12 + "directed Titanic?"
    with smollm2.matcher(qcompiler_grammar(leaves=2, words=8)) as m:
        assert not m.admits(long_leaf)[0]
    nested = "final_answer = count(count(count(entity(\"x\"))))\n"
    with smollm2.matcher(pyrag_grammar(depth=3)) as m:
        assert not m.admits(nested)[0]
    with smollm2.matcher(pyrag_grammar(depth=4)) as m:
        assert m.admits(nested)[0]


def _examples(frontend: str) -> list[tuple[str, str]]:
    key = "expression" if frontend == "qcompiler" else "program"
    return [(c["question"], c[key]) for c in CASES[:3]]


def test_generation_under_the_qcompiler_grammar_parses(smollm2: LlamaCppBackend) -> None:
    prompt = build_prompt("Where was the director of Avatar born?", "qcompiler", _examples("qcompiler"))
    res = smollm2.generate(prompt.messages(), grammar=qcompiler_grammar(leaves=3, words=16, chars=20),
                           max_tokens=200)
    assert res.finish_reason == "stop", res.text
    parsed = parse_expression(res.text)
    assert not [e for e in parsed.errors if e.stage == "parse"], (parsed.errors, res.text)


def test_generation_under_the_pyrag_grammar_reads_as_the_subset(smollm2: LlamaCppBackend) -> None:
    prompt = build_prompt("Where was the director of Avatar born?", "pyrag", _examples("pyrag"))
    res = smollm2.generate(prompt.messages(), grammar=pyrag_grammar(stmts=3, chars=30, depth=2), max_tokens=300)
    assert res.finish_reason == "stop", res.text
    ast.parse(res.text)  # well-formed Python (read only, never run)
    parsed = parse_pyrag(res.text)
    assert not [e for e in parsed.errors if e.stage == "parse"], (parsed.errors, res.text)
