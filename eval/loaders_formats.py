"""One reader per benchmark format: parsed JSON / TSV lines -> Records (see eval/README.md, "Loaders")."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from eval.loaders_sparql import prepare_gold_sparql
from eval.records import Record, Term, clean_term, literal, rows_from_bindings, uri
from kb_dumps.json_types import JsonObject, JsonValue
from kb_dumps.profiles import FREEBASE_NS, WIKIDATA_PREFIXES, detect_profile
from kb_dumps.stage_errors import KBQAError

WD = WIKIDATA_PREFIXES["wd"]
WDT = WIKIDATA_PREFIXES["wdt"]
_IRI = re.compile(r"https?://[^\s<>\"{}|^`\\]+")
# LC-QuAD 2.0 marks questions its annotators could not verbalise as "n/a", "na", "N / A N / A", [].
_NO_TEXT = {"", "na", "nana", "[]", "none", "null"}


def fail(path: Path, message: str, rec_id: str | int | None = None, line: int | None = None) -> KBQAError:
    """A malformed-file error naming the file and the record (or line)."""
    where = f"record {rec_id}: " if rec_id is not None else ""
    return KBQAError(f"{where}{message}", stage="parse", file=str(path), line=line,
                     qid=None if rec_id is None else str(rec_id))


def checked_records(path: Path, data: JsonValue, fmt: str, id_key: str, needed: str) -> Iterator[JsonObject]:
    """The records of a JSON list in turn, each an object with `id_key` and `needed`; the first that is not one
    stops the load with the error naming it (its id, else its position)."""
    for i, q in enumerate(data):
        if not isinstance(q, dict) or id_key not in q or needed not in q:
            raise fail(path, f"{fmt} records need '{id_key}' and '{needed}'",
                       q.get(id_key, f"#{i + 1}") if isinstance(q, dict) else f"#{i + 1}")
        yield q


def text_or_none(value: JsonValue) -> str | None:
    if not isinstance(value, str):
        return None
    s = " ".join(value.split())
    return None if re.sub(r"[\s/]", "", s).lower() in _NO_TEXT else s


def make_record(rec_id: str | int, questions: dict[str, str], sparql: str | None, *, kb: str, dataset: str,
                meta: JsonObject | None = None, answers: list | None = None, answer_vars: list[str] | None = None,
                boolean: bool | None = None, check_syntax: bool = True) -> Record:
    """Build a Record, preparing the gold query and deciding usability (reason kept, never dropped)."""
    meta = dict(meta or {})
    meta["kb"] = kb
    prepared = prepare_gold_sparql(sparql, kb=kb, check_syntax=check_syntax)
    if prepared.notes:
        meta["sparql_notes"] = prepared.notes
        meta["original_sparql"] = sparql
    rec = Record(id=str(rec_id), questions={k: v for k, v in questions.items() if v}, sparql=prepared.sparql,
                 answers=answers, dataset=dataset, meta=meta, answer_vars=list(answer_vars or []), boolean=boolean)
    if not rec.questions:
        rec.usable, rec.reason = False, "no question text in the file"
    elif prepared.reason:
        rec.usable, rec.reason = False, prepared.reason
    elif rec.sparql is None and not rec.has_gold_answers:
        rec.usable, rec.reason = False, "neither a gold SPARQL query nor gold answers"
    return rec


def file_kb(path: Path, sparqls: list[str | None]) -> str:
    """The KB profile a file's queries are written for, from the IRIs they use (prefixed wd: counts)."""
    iris: list[str] = []
    for q in sparqls[:200]:
        if q:
            iris.extend(_IRI.findall(q))
            if re.search(r"(?<![\w])(wd|wdt|p|ps|pq):[PQ]\d", q):
                iris.append(WD)
    return detect_profile(iris) if iris else "wikidata"


# ---- QALD JSON (QALD-7/9-plus/10, BESTIARY) and its flat variant [{id, question, sparql}] --------
def _qald_answers(path: Path, rid: str | int, raw: JsonValue) -> tuple[list | None, list[str], bool | None]:
    if raw is None or raw == []:
        return None, [], None
    if not isinstance(raw, list) or not isinstance(raw[0], dict):
        raise fail(path, "'answers' must be a list of SPARQL-JSON results", rid)
    first = raw[0]
    if "boolean" in first:
        return [], [], bool(first["boolean"])
    bindings = (first.get("results") or {}).get("bindings")
    if not isinstance(bindings, list):
        raise fail(path, "answer without 'results.bindings' or 'boolean'", rid)
    names, rows = rows_from_bindings(bindings, (first.get("head") or {}).get("vars"))
    return rows, names, None


def _qald_questions(path: Path, rid: str | int, q: dict) -> dict[str, str]:
    raw = q.get("question")
    if isinstance(raw, str):
        return {"en": text_or_none(raw) or ""}
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise fail(path, "'question' must be a string or a list of {language, string}", rid)
    out: dict[str, str] = {}
    for e in raw:
        if not isinstance(e, dict) or "language" not in e:
            raise fail(path, "each 'question' entry needs 'language' and 'string'", rid)
        out[str(e["language"])] = text_or_none(e.get("string")) or ""
    return out


def load_qald(path: Path, data: JsonValue, dataset: str, check_syntax: bool) -> list[Record]:
    file_id = None
    if isinstance(data, dict):
        items = data.get("questions")
        file_id = _qald_dataset_id(path, data.get("dataset"))
    else:
        items = data
    if not isinstance(items, list):
        raise fail(path, "QALD JSON needs a 'questions' list")

    def sparql_of(q: dict) -> str | None:
        query = q.get("query")
        if isinstance(query, dict):
            return query.get("sparql")
        return query if isinstance(query, str) else q.get("sparql")

    kb = file_kb(path, [sparql_of(q) for q in items if isinstance(q, dict)])
    out = []
    for i, q in enumerate(items):
        if not isinstance(q, dict) or q.get("id") is None:
            raise fail(path, "not a QALD question object with an 'id'", f"#{i + 1}")
        rid = q["id"]
        rows, names, boolean = _qald_answers(path, rid, q.get("answers"))
        meta = {k: q[k] for k in ("answertype", "aggregation", "onlydbo", "hybrid") if k in q}
        if file_id:
            meta["dataset_id"] = file_id
        out.append(make_record(rid, _qald_questions(path, rid, q), sparql_of(q), kb=kb, dataset=dataset, meta=meta,
                               answers=rows, answer_vars=names, boolean=boolean, check_syntax=check_syntax))
    return out


def _qald_dataset_id(path: Path, dataset: JsonValue) -> str | None:
    """QALD's `"dataset": {"id": "qald-9-test-multilingual"}`; a bare string id is read as the id too."""
    if dataset is None or isinstance(dataset, str):
        return dataset or None
    if isinstance(dataset, dict):
        ident = dataset.get("id")
        if ident is None or isinstance(ident, str | int):
            return None if ident is None else str(ident)
        raise fail(path, f"the 'dataset' object's 'id' must be a string, not {type(ident).__name__}")
    raise fail(path, f"'dataset' must be an object like {{\"id\": \"qald-9-test\"}} or a string id, not "
                     f"{type(dataset).__name__}")


# ---- Spider4SPARQL train: [{id, kg_name, question, query}], queries use `:` and `xsd:` undeclared ---------
# The dev files declare these two prefixes in each query; the train file leaves them out.
SPIDER4SPARQL_PREFIXES = {"": "http://valuenet/ontop/", "xsd": "http://www.w3.org/2001/XMLSchema#"}
# `:pets\#weight` is <http://valuenet/ontop/pets#weight> (the KGs' IRIs); written out in full, because rdflib keeps
# the backslash of the escaped `#` in the IRI and the DeSQ reader then refuses the guessed URI.
_SPIDER_NAME = re.compile(r"(?<![\w?$:>]):((?:[\w\-]|\\#)+)")
_QUOTED_OR_IRI = re.compile(r"(\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|<[^<>\s]*>)")


def _spider_iris(query: str) -> str:
    """The query with every `:local` name written as a full IRI (quoted strings and IRIs left as they are)."""
    parts = _QUOTED_OR_IRI.split(query)
    for i in range(0, len(parts), 2):
        parts[i] = _SPIDER_NAME.sub(lambda m: f"<{SPIDER4SPARQL_PREFIXES['']}{m.group(1).replace(chr(92), '')}>",
                                    parts[i])
    return "".join(parts)


def spider4sparql_query(query: str) -> str:
    """A Spider4SPARQL train query made runnable: the two prefixes the dev files declare, its names as full IRIs."""
    head = "".join(f"PREFIX {p}: <{iri}>\n" for p, iri in SPIDER4SPARQL_PREFIXES.items())
    return head + _spider_iris(query)


def load_spider4sparql(path: Path, data: JsonValue, dataset: str, check_syntax: bool) -> list[Record]:
    """Flat QALD records over the Spider KGs' IRIs: the dev files' prefixes declared, `kg_name` kept as meta."""
    if not isinstance(data, list):
        raise fail(path, "a Spider4SPARQL train file must hold a JSON list of records")
    items = [{**q, "query": spider4sparql_query(q["query"])} if isinstance(q["query"], str) else q
             for q in checked_records(path, data, "spider4sparql", "id", "query")]
    records = load_qald(path, items, dataset, check_syntax)
    for rec, q in zip(records, items, strict=True):
        if isinstance(q.get("kg_name"), str):
            rec.meta["kg_name"] = q["kg_name"]
    return records


# ---- LC-QuAD 2.0 ---------------------------------------------------------------------------------
def load_lcquad2(path: Path, data: JsonValue, dataset: str, check_syntax: bool) -> list[Record]:
    out = []
    for q in checked_records(path, data, "LC-QuAD 2.0", "uid", "sparql_wikidata"):
        text = text_or_none(q.get("question")) or text_or_none(q.get("paraphrased_question"))
        meta = {"intermediate_sparql": q.get("intermediate_sparql"),
                "paraphrased_question": text_or_none(q.get("paraphrased_question"))}
        if q.get("NNQT_question"):
            meta["nnqt_question"] = q["NNQT_question"]
        rec = make_record(q["uid"], {"en": text or ""}, q["sparql_wikidata"], kb="wikidata", dataset=dataset,
                          meta=meta, check_syntax=check_syntax)
        if not text:
            rec.reason = f"no question text in the file (question {q.get('question')!r}, paraphrase " \
                         f"{q.get('paraphrased_question')!r})"
        out.append(rec)
    return out


# ---- WikiWebQuestions (train/dev, and the WikiSP alignment file) ----------------------------------
_ALIGN_QUERY = re.compile(r"Query:\s*(.*?)\s*(?:\nEntities:|$)", re.S)
_ALIGN_ENTITY = re.compile(r"\s*(.+?) with QID (Q\d+);")


def load_wwq(path: Path, data: JsonValue, dataset: str, check_syntax: bool) -> list[Record]:
    out = []
    for q in checked_records(path, data, "WikiWebQuestions", "id", "sparql"):
        meta: JsonObject = {}
        # The question's field differs by copy: `utterance` (the WikiWebQuestions release), `question` (SPINACH's
        # copy, {id, question, sparql}), or inside `input` (the WikiSP alignment file).
        if "utterance" in q or "question" in q:
            text = text_or_none(q.get("utterance", q.get("question")))
        elif "input" not in q:
            raise fail(path, "a WikiWebQuestions record needs its question in 'utterance', 'question' or 'input'; "
                             f"this one has only {', '.join(sorted(map(str, q)))}", q["id"])
        else:  # WikiSP alignment: "Query: <question>\nEntities:<label> with QID <Q>; ..."
            m = _ALIGN_QUERY.search(str(q.get("input", "")))
            text = text_or_none(m.group(1)) if m else None
            tail = str(q.get("input", "")).split("Entities:", 1)
            meta["entities"] = {lab: qid for lab, qid in _ALIGN_ENTITY.findall(tail[1])} if len(tail) > 1 else {}
            meta["sparql_with_names"] = q.get("output")
        rows, names = (None, [])
        if "results" in q:
            if not isinstance(q["results"], list):
                raise fail(path, "'results' must be a list of bindings", q["id"])
            names, rows = rows_from_bindings(q["results"])
        out.append(make_record(q["id"], {"en": text or ""}, q["sparql"], kb="wikidata", dataset=dataset, meta=meta,
                               answers=rows, answer_vars=names, check_syntax=check_syntax))
    return out


# ---- RuBQ 1.0 / 2.0 --------------------------------------------------------------------------------
def load_rubq(path: Path, data: JsonValue, dataset: str, check_syntax: bool) -> list[Record]:
    out = []
    for q in checked_records(path, data, "RuBQ", "uid", "question_text"):
        answers = q.get("answers")
        if answers is not None and (not isinstance(answers, list) or not all(isinstance(a, dict) for a in answers)):
            raise fail(path, "'answers' must be a list of terms", q["uid"])
        rows = None if answers is None else [[clean_term(a)] for a in answers]
        tags = list(q.get("tags") or [])
        meta = {"tags": tags, "answer_text": q.get("answer_text"), "question_uris": q.get("question_uris"),
                "question_props": q.get("question_props")}
        if "no-answer" in tags:  # RuBQ's unanswerable questions: the gold is the empty answer set
            meta["no_answer"] = True
        out.append(make_record(q["uid"], {"ru": text_or_none(q["question_text"]) or "",
                                          "en": text_or_none(q.get("question_eng")) or ""},
                               q.get("query"), kb="wikidata", dataset=dataset, meta=meta, answers=rows,
                               answer_vars=["answer"], check_syntax=check_syntax))
    return out


# ---- GrailQA / ComplexWebQuestions (Freebase) -----------------------------------------------------
def _freebase_term(value: str, is_entity: bool | None = None) -> Term:
    if is_entity or (is_entity is None and re.fullmatch(r"[mg]\.[0-9a-z_]+", value)):
        return uri(FREEBASE_NS + value)
    return literal(value)


def load_grailqa(path: Path, data: JsonValue, dataset: str, check_syntax: bool) -> list[Record]:
    out = []
    for i, q in enumerate(data):
        rid = (q.get("qid", q.get("ID")) if isinstance(q, dict) else None)
        if rid is None or not isinstance(q, dict):
            raise fail(path, "GrailQA/CWQ records need 'qid' (GrailQA) or 'ID' (CWQ)", f"#{i + 1}")
        sparql = q.get("sparql_query", q.get("sparql"))
        raw = q.get("answer", q.get("answers"))
        rows = None
        if raw is not None:
            if not isinstance(raw, list):
                raise fail(path, "'answer' must be a list", rid)
            rows = []
            for a in raw:
                if not isinstance(a, dict):
                    raise fail(path, "each answer must be an object", rid)
                if "answer_argument" in a:  # GrailQA
                    rows.append([_freebase_term(str(a["answer_argument"]), a.get("answer_type") == "Entity")])
                elif "answer_id" in a:  # CWQ
                    rows.append([_freebase_term(str(a["answer_id"]))])
                else:
                    raise fail(path, "answer without 'answer_argument' or 'answer_id'", rid)
        meta = {k: q[k] for k in ("s_expression", "function", "level", "domains", "topic_entity",
                                  "compositionality_type", "machine_question") if k in q}
        out.append(make_record(rid, {"en": text_or_none(q.get("question")) or ""}, sparql, kb="freebase",
                               dataset=dataset, meta=meta, answers=rows, answer_vars=["value"],
                               check_syntax=check_syntax))
    return out


# ---- SimpleQuestions-Wikidata TSV -----------------------------------------------------------------
_SQ_ID = re.compile(r"Q\d+")
_SQ_PROP = re.compile(r"[PR]\d+")


def load_simplequestions(path: Path, lines: list[str], dataset: str, check_syntax: bool) -> list[Record]:
    """`subject \\t property \\t object \\t question`; `R123` is the inverse of `P123`."""
    out = []
    stem = path.name.split(".")[0]
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        rid = f"{stem}-{n}"
        parts = line.rstrip("\n").split("\t")
        if len(parts) < 4:
            raise fail(path, f"expected 4 tab-separated fields (subject, property, object, question), "
                             f"found {len(parts)}", rid, line=n)
        s, p, o, question = parts[0].strip(), parts[1].strip(), parts[2].strip(), "\t".join(parts[3:])
        if not (_SQ_ID.fullmatch(s) and _SQ_PROP.fullmatch(p) and _SQ_ID.fullmatch(o)):
            raise fail(path, f"expected Q-id, P/R-id, Q-id, found {s!r}, {p!r}, {o!r}", rid, line=n)
        pid = "P" + p[1:]
        if p.startswith("R"):  # inverse: the question asks for a subject of (?x, P, S)
            sparql = f"SELECT ?x WHERE {{ ?x <{WDT}{pid}> <{WD}{s}> . }}"
        else:
            sparql = f"SELECT ?x WHERE {{ <{WD}{s}> <{WDT}{pid}> ?x . }}"
        meta = {"subject": s, "property": pid, "object": o, "inverse": p.startswith("R"),
                # The file gives one object; the KB may hold more answers for the same (s, p).
                "answers_partial": True}
        out.append(make_record(rid, {"en": text_or_none(question) or ""}, sparql, kb="wikidata", dataset=dataset,
                               meta=meta, answers=[[uri(WD + o)]], answer_vars=["x"], check_syntax=False))
    return out


READERS = {
    "qald": load_qald,
    "spider4sparql": load_spider4sparql,
    "lcquad2": load_lcquad2,
    "wwq": load_wwq,
    "rubq": load_rubq,
    "grailqa": load_grailqa,
    "simplequestions": load_simplequestions,
}
