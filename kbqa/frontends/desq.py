"""DeSQ front-end: the model's text (or JSON) → a Plan, with every problem collected as an ErrorInfo.

Tolerant of how models write (code fences, lowercase or colon headers, blank lines, `?var` gaps,
a missing final `.`), strict about meaning (placeholders grounded, ACs with fragments, projected
variables bound, kinds in the right positions). `parse_desq` never raises.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from assembler.plan import KINDS, Group, Node, Placeholder, Query, walk
from kb_dumps.json_types import JsonObject, JsonValue
from kb_dumps.stage_errors import ErrorInfo, internal_error
from kbqa.frontends.desq_check import validate
from kbqa.frontends.desq_expr import expand_uri
from kbqa.frontends.desq_fragments import Fragment, FragmentError, parse_fragment
from kbqa.frontends.desq_types import FORMAT, Constraint, GroundingLine, ParseResult
from kbqa.frontends.desq_writer import to_desq_text as _write_desq

if TYPE_CHECKING:
    from kbqa.pipeline import Engine

MAX_ERRORS = 50

_FENCE_RE = re.compile(r"^\s*```")
_FORMAT_RE = re.compile(r"^\s*format\s*:?\s*(\S+)\s*$", re.I)
_HEADER_RE = re.compile(
    r"^[\s#*_>-]*(atomic[\s_]+constraints?|constraints|fragments?|grounding)[\s*_]*:?[\s*_]*$", re.I)
_AC_TEXT_RE = re.compile(r"^[\s*\-]*(AC\s*\d+)\s*[:.)\-]\s?(.*)$", re.I)
_AC_FRAG_RE = re.compile(r"^[\s*\-]*(AC\s*\d+)\s*(?:=>|->|:)\s?(.*)$", re.I)
_GROUND_RE = re.compile(r"^[\s*\-]*\[([^\]]*)\]\s*([A-Za-z]*)\s*(.*)$")
_NULL_URIS = {"", "none", "null", "-", "n/a", "unknown", "?"}


class _Collector:
    def __init__(self) -> None:
        self.errors: list[ErrorInfo] = []
        self.dropped = 0

    def add(self, stage: str, message: str, *, line: int | None = None, ac: str | None = None) -> None:
        if len(self.errors) >= MAX_ERRORS:
            self.dropped += 1
            return
        self.errors.append(ErrorInfo(stage=stage, message=message, line=line, ac=ac))

    def finish(self) -> list[ErrorInfo]:
        if self.dropped:
            self.errors.append(ErrorInfo("parse", f"{self.dropped} more problems not shown; fix these first"))
        return self.errors


# A rewrite of the built Plan and its grounding lines before validation (QCompiler binds `{x}` mentions).
Rewrite = Callable[[Query, list["GroundingLine"]], tuple[Query, list["GroundingLine"]]]


def parse_desq(text: str, *, rewrite: Rewrite | None = None) -> ParseResult:
    """Parse DeSQ text (or its JSON form, detected by a leading `{`) into a Plan; `rewrite` changes the built
    Plan and grounding lines before they are validated. Never raises."""
    errs = _Collector()
    try:
        if not isinstance(text, str):
            errs.add("parse", f"expected DeSQ text, got {type(text).__name__}")
            return ParseResult(None, errs.finish())
        lines = [ln for ln in text.splitlines() if not _FENCE_RE.match(ln)]
        body = "\n".join(lines).strip()
        if body.startswith("{"):
            constraints, grounding, fmt = _read_json(text, errs)
        else:
            constraints, grounding, fmt = _read_text(text, errs)
        if fmt != FORMAT:
            return ParseResult(None, errs.finish(), format=fmt)
        if not constraints and not errs.errors:  # headers with nothing under them (or only stray lines)
            errs.add("parse", "no atomic constraints: write `AC1: …` lines under ATOMIC CONSTRAINTS and "
                              "`AC1 => SELECT …` under FRAGMENTS")
        plan = _build(constraints, grounding, errs) if constraints else None
        if rewrite is not None and plan is not None:
            plan, grounding = rewrite(plan, grounding)
        if constraints and plan is not None:
            validate(plan, constraints, grounding, errs.add)
        result_errors = errs.finish()
        return ParseResult(None if result_errors else plan, result_errors, constraints, grounding, fmt)
    except Exception as exc:  # "never raises": a bug of ours is reported as stage internal, never as the input's
        return ParseResult(None, [internal_error(exc, "parsing the DeSQ text")])


# ---- text form ------------------------------------------------------------------------------


def _split_bars(line: str) -> list[str]:
    """Split a grounding line on `|`, keeping `\\|` as a literal bar."""
    cells, cur, i = [], [], 0
    while i < len(line):
        if line[i] == "\\" and i + 1 < len(line) and line[i + 1] == "|":
            cur.append("|")
            i += 2
            continue
        if line[i] == "|":
            cells.append("".join(cur).strip())
            cur = []
        else:
            cur.append(line[i])
        i += 1
    cells.append("".join(cur).strip())
    return cells


def _norm_ac(raw: str) -> str:
    return "AC" + re.sub(r"\D", "", raw)


def _read_text(text: str, errs: _Collector) -> tuple[list[Constraint], list[GroundingLine], str]:
    return _TextReader(errs).read(text)


class _TextReader:
    """Reads the three sections of a DeSQ text line by line: the AC sentences, their fragments (which may span
    lines), the grounding lines. Text before the first section (a model's preamble) is ignored on purpose."""

    def __init__(self, errs: _Collector):
        self.errs = errs
        self.section: str | None = None
        self.seen: set[str] = set()
        self.by_id: dict[str, Constraint] = {}
        self.order: list[Constraint] = []
        self.grounding: list[GroundingLine] = []
        self.current: Constraint | None = None  # the AC whose sentence or fragment is being read
        self.frag_lines: dict[str, list[str]] = {}

    def read(self, text: str) -> tuple[list[Constraint], list[GroundingLine], str]:
        for lineno, raw in enumerate(text.splitlines(), start=1):
            if _FENCE_RE.match(raw):
                continue
            line = raw.rstrip()
            fm = _FORMAT_RE.match(line)
            if fm and self.section is None:
                if fm.group(1).lower() != FORMAT:
                    self.errs.add("parse", f"unknown format {fm.group(1)[:40]!r}: this reader understands only "
                                           f"{FORMAT}", line=lineno)
                    return [], [], fm.group(1)
                continue
            hm = _HEADER_RE.match(line)
            if hm:
                self.header(hm.group(1).lower(), lineno)
            elif not line.strip():
                if self.section == "fragments" and self.current is not None:
                    self.frag_lines[self.current.id].append("")
            elif self.section == "constraints":
                self.sentence_line(line, lineno)
            elif self.section == "fragments":
                self.fragment_line(line, lineno)
            elif self.section == "grounding":
                g = _read_grounding_line(line, lineno, self.errs)
                if g is not None:
                    self.grounding.append(g)
        return self.finish()

    def constraint(self, ac: str, line: int) -> Constraint:
        if ac not in self.by_id:
            self.by_id[ac] = Constraint(ac, line=line)
            self.order.append(self.by_id[ac])
        return self.by_id[ac]

    def header(self, word: str, lineno: int) -> None:
        section = "constraints" if "constraint" in word else "fragments" if word.startswith("frag") else "grounding"
        if section in self.seen:
            self.errs.add("parse", f"the {section.upper()} section appears twice", line=lineno)
        self.section = section
        self.seen.add(section)
        self.current = None

    def sentence_line(self, line: str, lineno: int) -> None:
        m = _AC_TEXT_RE.match(line)
        if m:
            c = self.constraint(_norm_ac(m.group(1)), lineno)
            if c.text:
                self.errs.add("parse", f"{c.id} is described twice", line=lineno, ac=c.id)
            c.text = m.group(2).strip()
            self.current = c
        elif self.current is not None:
            self.current.text = (self.current.text + " " + line.strip()).strip()
        else:
            self.errs.add("parse", "expected 'ACn: sentence' in ATOMIC CONSTRAINTS", line=lineno)

    def fragment_line(self, line: str, lineno: int) -> None:
        m = _AC_FRAG_RE.match(line)
        if m:
            c = self.constraint(_norm_ac(m.group(1)), lineno)
            if c.id in self.frag_lines:
                self.errs.add("parse", f"{c.id} has two fragments; write one fragment per AC", line=lineno, ac=c.id)
            c.fragment_line = lineno
            self.frag_lines[c.id] = [m.group(2)]
            self.current = c
        elif self.current is not None:
            self.frag_lines[self.current.id].append(line)
        else:
            self.errs.add("parse", "fragment text before the first 'ACn =>'", line=lineno)

    def finish(self) -> tuple[list[Constraint], list[GroundingLine], str]:
        for c in self.order:
            if c.id in self.frag_lines:
                c.fragment = "\n".join(self.frag_lines[c.id]).strip()
        for name in ("constraints", "fragments", "grounding"):
            if name not in self.seen:
                header = "ATOMIC CONSTRAINTS" if name == "constraints" else name.upper()
                self.errs.add("parse", f"missing section {header}")
        return self.order, self.grounding, FORMAT


def _read_grounding_line(line: str, lineno: int | None, errs: _Collector) -> GroundingLine | None:
    m = _GROUND_RE.match(line)
    if not m:
        errs.add("parse", "expected '[name] kind | label | description | uri' in GROUNDING", line=lineno)
        return None
    name, kind = m.group(1).strip(), m.group(2).lower()
    cells = _split_bars(m.group(3))
    if cells and cells[0] == "":
        cells = cells[1:]  # the bar right after the kind
    label = cells[0] if cells else ""
    description = cells[1] if len(cells) > 1 else ""
    uri = cells[2] if len(cells) > 2 else ""
    if len(cells) > 3:
        errs.add("parse", f"[{name}]: too many '|' cells; write \\| for a bar inside a label", line=lineno)
    return _grounding(name, kind, label, description, uri, lineno, errs)


def _grounding(name: str, kind: str, label: str, description: str, uri: str | None,
               lineno: int | None, errs: _Collector) -> GroundingLine | None:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        errs.add("parse", f"grounding name [{name[:40]}] must be an identifier", line=lineno)
        return None
    if kind not in KINDS:
        errs.add("parse", f"[{name}]: kind {kind[:20]!r} is not one of {', '.join(KINDS)}", line=lineno)
        return None
    if not label:
        errs.add("parse", f"[{name}]: the label is empty", line=lineno)
    full = None
    if uri is not None and uri.strip().lower() not in _NULL_URIS:
        full = expand_uri(uri.strip())
        if full is None:
            errs.add("parse", f"[{name}]: cannot read the guessed URI {uri[:60]!r}; write wd:Q42 or <http://…>",
                     line=lineno)
    return GroundingLine(name, kind, label, description, full, lineno)


# ---- JSON form ------------------------------------------------------------------------------


def _json_list(data: JsonObject, key: str, items: str, errs: _Collector) -> list[JsonValue]:
    """`data[key]` when it is a list; else none, and the error that says the list of `items` is missing."""
    raw = data.get(key)
    if isinstance(raw, list):
        return raw
    errs.add("parse", f"missing '{key}' (a list of {items})")
    return []


def _read_json(text: str, errs: _Collector) -> tuple[list[Constraint], list[GroundingLine], str]:
    body = "\n".join(ln for ln in text.splitlines() if not _FENCE_RE.match(ln))
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, RecursionError) as exc:
        line = getattr(exc, "lineno", None)
        errs.add("parse", f"invalid JSON: {getattr(exc, 'msg', str(exc))[:200]}", line=line)
        return [], [], FORMAT
    if not isinstance(data, dict):
        errs.add("parse", "the JSON form must be an object with 'constraints' and 'grounding'")
        return [], [], FORMAT
    fmt = data.get("format", FORMAT)
    if fmt != FORMAT:
        errs.add("parse", f"unknown format {str(fmt)[:40]!r}: this reader understands only {FORMAT}")
        return [], [], str(fmt)
    constraints: list[Constraint] = []
    for i, item in enumerate(_json_list(data, "constraints", "{id, text, fragment}", errs)):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            errs.add("parse", f"constraints[{i}] must be an object with a string 'id'")
            continue
        cid = _norm_ac(item["id"]) if re.fullmatch(r"\s*AC\s*\d+\s*", item["id"], re.I) else item["id"]
        text_, frag = item.get("text", ""), item.get("fragment", "")
        if not isinstance(text_, str) or not isinstance(frag, str):
            errs.add("parse", f"{cid}: 'text' and 'fragment' must be strings", ac=cid)
            continue
        if any(c.id == cid for c in constraints):
            errs.add("parse", f"{cid} appears twice", ac=cid)
            continue
        constraints.append(Constraint(cid, text_.strip(), frag.strip()))
    grounding: list[GroundingLine] = []
    for i, item in enumerate(_json_list(data, "grounding", "{name, kind, label, description, uri}", errs)):
        if not isinstance(item, dict):
            errs.add("parse", f"grounding[{i}] must be an object")
            continue
        vals = [item.get(k) for k in ("name", "kind", "label", "description")]
        uri = item.get("uri")
        if not all(isinstance(v, str) for v in vals[:2]) or not all(isinstance(v, str | None) for v in vals[2:]) \
                or not isinstance(uri, str | None):
            errs.add("parse", f"grounding[{i}]: name and kind must be strings; label, description, uri strings or null")
            continue
        name = vals[0].strip().strip("[]")  # type: ignore[union-attr]
        g = _grounding(name, vals[1].lower(), vals[2] or "", vals[3] or "", uri, None, errs)  # type: ignore[union-attr]
        if g is not None:
            grounding.append(g)
    return constraints, grounding, FORMAT


# ---- stitching fragments into one Query -------------------------------------------------------


def _build(constraints: list[Constraint], grounding: list[GroundingLine], errs: _Collector) -> Query | None:
    heads: list[Query] = []
    items: list[Node] = []
    mods = Fragment()
    for c in constraints:
        if not c.fragment.strip():
            if c.fragment_line is None and c.fragment == "":
                errs.add("validate", f"{c.id} has no fragment; add '{c.id} => …' under FRAGMENTS", line=c.line, ac=c.id)
            else:
                errs.add("validate", f"{c.id} has an empty fragment", line=c.fragment_line, ac=c.id)
            continue
        try:
            frag = parse_fragment(c.fragment, c.id)
        except FragmentError as exc:
            line = (c.fragment_line + exc.line - 1) if c.fragment_line else None
            errs.add("parse", str(exc), line=line, ac=c.id)
            continue
        if frag.head is not None:
            heads.append(frag.head)
        items.extend(frag.items)
        for name in ("group_by", "having", "order_by"):
            getattr(mods, name).extend(getattr(frag, name))
        for name in ("limit", "offset"):
            value = getattr(frag, name)
            if value is not None:
                if getattr(mods, name) is not None:
                    errs.add("validate", f"{c.id}: {name.upper()} given twice", line=c.fragment_line, ac=c.id)
                setattr(mods, name, value)
    if not heads:
        if constraints:
            errs.add("validate", "no query form: the first AC's fragment must be 'SELECT ?v…', "
                     "'SELECT (COUNT(?v) AS ?n)' or 'ASK'", ac=constraints[0].id)
        return None
    if len(heads) > 1:
        errs.add("validate", f"{len(heads)} query forms (in {', '.join(str(h.ac) for h in heads)}); write one",
                 ac=heads[1].ac)
    q = heads[0]
    q.where = Group(q.where.items + items, ac=q.ac)
    q.group_by, q.having, q.order_by = q.group_by or mods.group_by, q.having or mods.having, mods.order_by
    q.limit, q.offset = mods.limit, mods.offset
    _fill_placeholders(q, grounding)
    return q


def _fill_placeholders(q: Query, grounding: list[GroundingLine]) -> None:
    """Copy kind / label / description / guessed URI of each grounding line onto its occurrences."""
    by_name = {g.name: g for g in grounding}
    for node in walk(q):
        if isinstance(node, Placeholder) and node.name in by_name:
            g = by_name[node.name]
            node.kind, node.label, node.description, node.guessed_uri = g.kind, g.label, g.description, g.uri


def to_desq_text(source: Query | ParseResult) -> str:
    """DeSQ text for a Plan or ParseResult (see `desq_writer.to_desq_text`)."""
    return _write_desq(source)


def frontend(engine: Engine) -> Callable[[str], ParseResult]:
    """The DeSQ parser, as the `desq` entry of `kbqa.frontends.FRONTENDS` (it needs nothing of the engine)."""
    return parse_desq
