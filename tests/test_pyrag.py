"""PyRAG: the subset is read with `ast` and never executed; errors name the line; lowering, slicing, fuzzing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assembler.plan import Query, SubQuery, Triple
from assembler.writer import write_sparql
from kbqa.frontends.pyrag import parse_pyrag, read_program

LEAVES = json.loads((Path(__file__).parent / "fixtures" / "multihop" / "leaves.json").read_text(encoding="utf-8"))

DESIGN_EXAMPLE = '''film = entity("Titanic", "1997 film by James Cameron")
director = hop(film, "director")
born = hop(director, "date of birth")
final_answer = born
'''


def test_design_example_lowers_to_a_two_hop_select() -> None:
    result = parse_pyrag(DESIGN_EXAMPLE)
    assert result.ok, result.errors
    plan = result.plan
    assert plan.form == "select" and [v.name for v in plan.projection] == ["born"]
    triples = [i for i in plan.where.items if isinstance(i, Triple)]
    assert [(t.p.label, t.ac) for t in triples] == [("director", "line2"), ("date of birth", "line3")]
    assert triples[0].s.label == "Titanic" and triples[0].s.description == "1997 film by James Cameron"
    assert Query.from_json_dict(json.loads(json.dumps(plan.to_dict()))) == plan


def test_only_the_slice_final_answer_depends_on_is_lowered() -> None:
    program = DESIGN_EXAMPLE.replace("final_answer = born", "cast = hop(film, \"cast member\")\nfinal_answer = director")
    result = parse_pyrag(program)
    assert result.ok and result.lowered_lines == [1, 2, 5]
    assert [t.p.label for t in result.plan.where.items] == ["director"]


def test_aggregate_mid_chain_becomes_a_subquery_and_final_aggregate_is_the_query() -> None:
    program = '''films = rhop(entity("Steven Spielberg"), "director")
best = argmax(films, "box office")
final_answer = hop(best, "genre")
'''
    plan = parse_pyrag(program).plan
    assert isinstance(plan.where.items[0], SubQuery) and plan.where.items[0].query.limit == 1
    count = parse_pyrag('final_answer = count(rhop(entity("X"), "director"))').plan
    assert count.form == "count"
    sparql = write_sparql(count, "wikidata", mapping={"x": "wd:Q1", "director": "wdt:P57"}).sparql
    assert "SELECT (COUNT(DISTINCT ?var1) AS ?var2)" in sparql


def test_compare_is_an_ask_and_filter_values_are_typed() -> None:
    program = '''a = hop(entity("A"), "date of birth")
b = hop(entity("B"), "date of birth")
final_answer = compare(a, "<", b)
'''
    assert parse_pyrag(program).plan.form == "ask"
    plan = parse_pyrag('x = hop(entity("A"), "date of birth")\nfinal_answer = filter(x, ">=", "1950-01-01")').plan
    sparql = write_sparql(plan, "wikidata", mapping={"a": "wd:Q1", "date_of_birth": "wdt:P569"}).sparql
    assert '"1950-01-01T00:00:00Z"^^xsd:dateTime' in sparql


def test_ask_kb_joins_fstring_variables() -> None:
    program = '''film = entity("Inception", uri="wd:Q25188")
person = hop(film, "director", uri="wdt:P57")
final_answer = ask_kb(f"Where did {person} study?")
'''
    result = parse_pyrag(program, lambda q: LEAVES[q])
    assert result.ok, result.errors
    sparql = write_sparql(result.plan, "wikidata", mapping={
        "inception": "wd:Q25188", "director": "wdt:P57", "k3_educated_at": "wdt:P69"}).sparql
    assert " ".join(sparql.split()).endswith("SELECT DISTINCT ?var1 WHERE { wd:Q25188 wdt:P57 ?var2 . "
                                             "?var2 wdt:P69 ?var1 . }")
    assert [q.text for q in result.subquestions] == ["Where did {person} study?"]


@pytest.mark.parametrize("program, line, words", [
    ("import os\nfinal_answer = entity('x')", 1, "an import"),
    ("x = entity('a')\nfinal_answer = x.label", 2, "attribute access"),
    ("final_answer = os.system('touch /tmp/x')", 1, "attribute"),
    ("final_answer = open('/etc/passwd')", 1, "forbidden"),
    ("final_answer = eval('1')", 1, "forbidden"),
    ("final_answer = exec('1')", 1, "forbidden"),
    ("final_answer = __import__('os')", 1, "forbidden"),
    ("x = entity('a')\nfinal_answer = ().__class__.__bases__", 2, "attribute"),
    ("while True: pass\nfinal_answer = entity('a')", 1, "a loop"),
    ("for i in range(3): pass\nfinal_answer = entity('a')", 1, "a loop"),
    ("final_answer = [hop(x, 'p') for x in y]", 1, "comprehension"),
    ("f = lambda: 1\nfinal_answer = entity('a')", 1, "lambda"),
    ("def f(): pass\nfinal_answer = entity('a')", 1, "function definition"),
    ("__x = entity('a')\nfinal_answer = __x", 1, "dunder"),
    ("final_answer = print('a')", 1, "not a primitive"),
    ("final_answer = hop(y, 'p')", 1, "before it is assigned"),
    ("x = entity('a')", None, "never assigned"),
    ("final_answer = hop(entity('a'), 'p', 'd', 'u', 'extra')", 1, "at most"),
    ("final_answer = hop(entity('a'))", 1, "needs property"),
    ("final_answer = entity(f'{x}')", 1, "f-strings are allowed only"),
    ("final_answer = entity('a', kind='x')", 1, "no parameter"),
    ("x = (", 1, "syntax error"),
    ("x = entity('a')\nfinal_answer = filter(x, 'like', 3)", 2, "op must be"),
    ("x = entity('a')\nfinal_answer = count(x)", 2, "single entity"),
    ("x = cls('a')\nfinal_answer = hop(x, 'p')", 2, "class value"),
    ("final_answer = entity('a', uri='not a uri at all')", 1, "cannot read the uri"),
])
def test_outside_the_subset_is_an_error_naming_the_line(program: str, line: int | None, words: str) -> None:
    result = parse_pyrag(program)
    assert result.plan is None and result.errors
    assert any(words in e.message for e in result.errors), result.errors
    if line is not None:
        assert any(e.line == line for e in result.errors)


def test_malicious_programs_are_never_executed(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    programs = [
        f"import os\nos.system('touch {marker}')\nfinal_answer = entity('a')",
        f"final_answer = open('{marker}', 'w')",
        f"final_answer = __import__('os').system('touch {marker}')",
        f"x = ().__class__.__bases__[0].__subclasses__()\nfinal_answer = open('{marker}', 'w')",
        f"open('{marker}', 'w').write('x')\nfinal_answer = entity('a')",
        f"final_answer = entity(eval(\"open('{marker}', 'w')\"))",
        "while True: pass\nfinal_answer = entity('a')",  # would hang if it ran
    ]
    for program in programs:
        result = parse_pyrag(program)
        assert result.plan is None and result.errors and all(e.line for e in result.errors[:1])
    assert not marker.exists()


# ---- property-based: valid programs, then mutations ----------------------------------------------

_labels = st.sampled_from(["Titanic", "director", "date of birth", "genre", "C++", "a \"quoted\" label"])
_ops = st.sampled_from(["hop", "rhop", "filter", "count", "argmax", "isa", "compare", "ask_kb"])


@st.composite
def programs(draw: st.DrawFn) -> str:
    lines = [f"v0 = entity({draw(_labels)!r}, {draw(_labels)!r})"]
    for i in range(1, draw(st.integers(1, 6))):
        src = f"v{draw(st.integers(0, i - 1))}"
        op = draw(_ops)
        if op in ("hop", "rhop", "argmax"):
            lines.append(f"v{i} = {op}({src}, {draw(_labels)!r})")
        elif op == "filter":
            lines.append(f"v{i} = filter({src}, {draw(st.sampled_from(['<', '=', '!=']))!r}, {draw(st.integers())})")
        elif op == "isa":
            lines.append(f"v{i} = isa({src}, cls({draw(_labels)!r}))")
        elif op == "compare":
            lines.append(f"v{i} = compare({src}, '<', v0)")
        elif op == "ask_kb":
            lines.append(f"v{i} = ask_kb(f\"Who directed {{{src}}}?\")")
        else:
            lines.append(f"v{i} = count({src})")
    lines.append(f"final_answer = v{len(lines) - 1}")
    return "\n".join(lines)


@settings(max_examples=150, deadline=None)
@given(programs())
def test_generated_programs_lower_or_report_a_typed_error(program: str) -> None:
    result = parse_pyrag(program, lambda q: LEAVES.get(q.replace("{", "").replace("}", ""), "not desq"))
    assert (result.plan is None) == bool(result.errors)
    assert not any(e.stage == "internal" for e in result.errors), result.errors
    assert read_program(program).errors == []  # every generated program is inside the subset


@settings(max_examples=200, deadline=None)
@given(programs(), st.lists(st.tuples(st.integers(0, 500), st.sampled_from(
    ["(", ")", ".x", "[0]", "__", "import os\n", "\n", "f'{v0}'", "lambda: 1", "'", "\"", " ", "#", "\\", "exec",
     "open(", "**", "while True: pass\n"])), max_size=4))
def test_mutated_programs_never_crash(program: str, edits: list[tuple[int, str]]) -> None:
    for pos, piece in edits:
        pos = pos % (len(program) + 1)
        program = program[:pos] + piece + program[pos:]
    result = parse_pyrag(program, lambda q: "not desq")
    assert (result.plan is None) == bool(result.errors)
    assert not any(e.stage == "internal" for e in result.errors), result.errors


@pytest.mark.parametrize("program, words", [
    ("a = 1\x00\nfinal_answer = a\n", "Python syntax error: source code string cannot contain null bytes"),
    ("x = " + "-" * 15_000 + "1\nfinal_answer = x\n", "the program is nested too deeply for Python's parser"),
])
def test_unreadable_programs_name_the_file_never_line_none(tmp_path: Path, run_cli, program: str,
                                                           words: str) -> None:
    """Issue 15: `line None: ...` for a syntax error without a line, and a bare `MemoryError` with no file."""
    assert "None" not in read_program(program).errors[0].message
    path = tmp_path / "prog.py"
    path.write_text(program, encoding="utf-8")
    code, _, err = run_cli("compile", path, "--frontend", "pyrag", "--no-execute")
    assert code == 3 and f"error: [parse] {path}: {words}" in err, err
    assert "None" not in err and "MemoryError" not in err
