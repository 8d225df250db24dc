"""Linking for the `explore` translator: what a question says (cue words, numbers, comparisons) and what of the
knowledge graph it names (classes, predicates, quoted values, entities), each with a score, all kept as
alternatives for the query-graph search (propose/)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from grounding.schema import SchemaMemory
from grounding.text import normalize
from kb_dumps.json_types import JsonObject
from kbqa.translators.explore.link.name_match import abbrev_score, abbreviates, acronym_score, name_score
from kbqa.translators.language import ENGLISH, LanguageProfile

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9.\-']*|\d+(?:\.\d+)?")
# a number ends a sentence too ("more than 300."); it is no number when part of a longer token ("1.2.3", "v2")
# a number, with thousands written apart by commas ("15,000") or not
_NUMBER = re.compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?!\w|\.\d)")
# a single quote inside a word ("the head's name") opens and closes nothing
_QUOTED = re.compile(r"(?<![A-Za-z])'([^']{1,80})'(?![A-Za-z])|\"([^\"]{1,80})\"|‘([^’]{1,80})’|“([^”]{1,80})”")


@dataclass
class Cues:
    """What the question's wording says about the query's shape."""

    ask: bool = False
    count: bool = False
    aggregates: list[str] = field(default_factory=list)  # AVG, MIN, MAX, SUM in order of mention
    superlative: str | None = None  # "desc" | "asc"
    superlative_word: str = ""
    top_k: int | None = None
    group: bool = False
    order: str | None = None  # "desc" | "asc" for "ordered by …"
    negation: bool = False
    comparisons: list[tuple[str, float, int]] = field(default_factory=list)  # (op, number, char offset)
    between: tuple[float, float] | None = None
    numbers: list[tuple[float, int, int]] = field(default_factory=list)  # (value, start, end)
    quoted: list[tuple[str, int, int]] = field(default_factory=list)
    comparatives: list[tuple[str, str, int]] = field(default_factory=list)  # (op, word, offset): "faster than"
    same: bool = False  # "the same keeper", "any common enclosure"
    vs_average: list[tuple[str, int]] = field(default_factory=list)  # (op, offset): "older than (the) average"
    wh: str = ""  # who | when | where | how many | which | what

    def to_dict(self) -> JsonObject:
        return {k: v for k, v in self.__dict__.items() if v not in (None, False, [], "")}


def read_cues(question: str, lang: LanguageProfile = ENGLISH) -> Cues:
    """The cue words of `question`, read with the words of `lang`."""
    q = " " + " ".join(re.sub(r"[?,;:!()]", " ", question.lower()).split()) + " "
    c = Cues()
    # "is X a lion or a zebra" asks which, not whether; "is there any X with A or B" still asks whether
    c.ask = q.lstrip().startswith(lang.yes_no_starts) and f" {lang.how_word} " not in q[:12] and \
        (f" {lang.or_word} " not in q or q.lstrip().startswith(lang.existential_starts))
    c.count = any(k in q for k in lang.count_cues)
    for w, agg in lang.aggregate_words.items():
        i = q.find(f" {w} ")
        if i >= 0:
            c.aggregates.append((i, agg))  # type: ignore[arg-type]
    c.aggregates = [a for _, a in sorted(c.aggregates)]  # type: ignore[misc]
    for direction, words in (("desc", lang.superlative_desc), ("asc", lang.superlative_asc)):
        for w in words:
            if f" {w} " in q and not any(f"{k} {w} " in q for k in lang.not_superlative_after):
                c.superlative, c.superlative_word = direction, w
                break
        if c.superlative:
            break
    m = lang.top_k_re.search(q)
    if m:
        c.top_k, c.superlative = int(m.group(1)), c.superlative or "desc"
    c.group = any(g in q for g in lang.group_cues) or any(g in q for g in lang.group_frequency_cues) or \
        lang.group_by_word in q and not any(k in q for k in lang.order_by_cues)
    if any(k in q for k in lang.order_desc_cues):
        c.order = "desc"
    elif any(k in q for k in lang.order_asc_cues):
        c.order = "asc"
    # "sorted by weight from the heaviest to the lightest" sorts; it does not ask for the heaviest one
    if c.order and c.superlative and not c.top_k and (
            lang.range_re.search(q) or any(k in q for k in lang.order_by_cues + (lang.order_of_cue,))):
        c.superlative, c.superlative_word = None, ""
    qn = q
    for bound in lang.negation_exceptions:
        qn = qn.replace(bound, " ")
    c.negation = any(n in qn for n in lang.negations)
    for m in _NUMBER.finditer(question):
        c.numbers.append((float(m.group(0).replace(",", "")), m.start(), m.end()))
    for m in lang.number_word_re.finditer(question.lower()):
        c.numbers.append((float(lang.number_words[m.group(1)]), m.start(), m.end()))
    c.numbers.sort(key=lambda n: n[1])
    ql = question.lower()
    taken: list[tuple[int, int]] = []
    by_length = sorted(lang.comparisons, key=lambda co: -len(co[0]))  # "no more than" before "more than"
    for cue, op in by_length:
        for m in re.finditer(r"\b" + re.escape(cue) + r"\b", ql):
            if any(m.start() < e and s < m.end() for s, e in taken):
                continue
            nxt = [n for n in c.numbers if n[1] >= m.end() and n[1] - m.end() < 40]
            if nxt:
                c.comparisons.append((op, nxt[0][0], m.start()))
                taken.append((m.start(), m.end()))
    c.comparisons.sort(key=lambda cmp: cmp[2])
    m = lang.between_re.search(ql)
    if m:
        c.between = (float(m.group(1).replace(",", "")), float(m.group(2).replace(",", "")))
    for m in lang.comparative_re.finditer(ql):
        word = m.group(1)
        c.comparatives.append(("<" if lang.is_lesser_comparative(word) else ">", word, m.start()))
    for cue, op in by_length:
        for m in lang.versus_average_re(cue).finditer(ql):
            if not any(abs(m.start() - p) < 3 for _, p in c.vs_average):
                c.vs_average.append((op, m.start()))
    for m in lang.comparative_average_re.finditer(ql):
        if not any(abs(m.start() - p) < 12 for _, p in c.vs_average):
            c.vs_average.append(("<" if m.group(1) in lang.lesser_than_average else ">", m.start()))
    if c.vs_average:  # "above the average weight" compares with an aggregate, not an average to report
        c.aggregates = [agg for agg in c.aggregates if agg != "AVG"]
    c.same = bool(lang.same_re.search(ql)) and c.ask
    for m in _QUOTED.finditer(question):
        text = next(g for g in m.groups() if g is not None)
        c.quoted.append((text, m.start(), m.end()))
    for wh, pattern in lang.wh_res:
        if pattern.search(ql):
            c.wh = wh
            break
    return c


@dataclass
class Link:
    """Something of the KG a span of the question names: `kind` class | predicate | value | entity."""

    kind: str
    iri: str  # the class / predicate / entity IRI; for a value, its predicate
    score: float
    span: tuple[int, int]  # character offsets in the question
    text: str  # the span
    value: str | None = None  # a value's lexical form
    datatype: str | None = None
    label: str = ""
    op: str = "="  # how a value compares: "=" (equals) or "contains" (a quoted word inside the value)
    # an entity named differently from its label (link/names.py), a value by the word its code shortens: a weak link
    variant: bool = False
    meaning: bool = False  # a predicate named by a word of like meaning, not its own words (link/meaning.py)

    def to_dict(self) -> JsonObject:
        return {k: v for k, v in self.__dict__.items() if v is not None}


def ngrams(question: str, n_max: int = 6) -> list[tuple[int, int, str]]:
    """(start, end, text) of every word n-gram of the question, longest first."""
    toks = [(m.start(), m.end()) for m in _WORD.finditer(question)]
    out = []
    for n in range(min(n_max, len(toks)), 0, -1):
        for i in range(len(toks) - n + 1):
            s, e = toks[i][0], toks[i + n - 1][1]
            out.append((s, e, question[s:e]))
    return out


def coordinated_grams(question: str, lang: LanguageProfile) -> list[tuple[int, int, str]]:
    """"the first and last names": the first modifier shares the head noun after the second, so its word also
    reads as the two together ("first names"), spanning the modifier alone (the second one's n-gram reads the rest)."""
    toks = list(_WORD.finditer(question))
    skip = lang.function_words | set(lang.aggregate_words) | set(lang.superlative_desc) | set(lang.superlative_asc)
    out = []
    for a, conj, b, head in zip(toks, toks[1:], toks[2:], toks[3:], strict=False):
        words = {a.group(0).lower(), b.group(0).lower(), head.group(0).lower()}
        # nothing but spaces between: "names and seatings, ordered" is a list, not two modifiers
        gaps = (question[x.end():y.start()] for x, y in ((a, conj), (conj, b), (b, head)))
        if conj.group(0).lower() == lang.and_word and not words & skip and all(g.isspace() for g in gaps) and \
                a.group(0).isalpha() and a.group(0).lower() != head.group(0).lower():
            out.append((a.start(), a.end(), f"{a.group(0)} {head.group(0)}"))
    return out


def without_domain(core: list[str], pred: str, schema: SchemaMemory, lang: LanguageProfile) -> list[str]:
    """A predicate's name words less those of the classes it belongs to (written out or shortened: *emp fname* of
    *employee* is "fname"); [] when that leaves nothing or all."""
    info = schema.predicates.get(pred)
    words = {w for d in (info.domains if info else {}) for w in lang.stems(schema.class_label(d))}
    rest = [w for w in core if w not in words and not any(abbreviates(w, c) for c in words)]
    return rest if rest and len(rest) < len(core) else []


def link_schema(question: str, schema: SchemaMemory, min_score: float = 0.8, lang: LanguageProfile = ENGLISH
                ) -> list[Link]:
    """Classes and predicates the question names (by their labels or readable IRI names), best first."""
    grams = [(s, e, t, lang.stems(t)) for s, e, t in ngrams(question, 4) + coordinated_grams(question, lang)]
    grams = [g for g in grams if not all(w in lang.function_words for w in g[3])]
    links: list[Link] = []
    for kind, items in (("class", [(c, schema.class_label(c)) for c in schema.classes]),
                        ("predicate", [(p, i.label) for p, i in schema.predicates.items()])):
        for iri, label in items:
            name = lang.stems(label)
            # "has weight" / "ref keeper id": the name without its glue words also counts
            core = [w for w in name if w not in lang.name_glue_words and w not in lang.function_words] or name
            # "festival name" of a festival: its own words without its class's name ("the names of festivals")
            own = without_domain(core, iri, schema, lang) if kind == "predicate" else []
            best: Link | None = None
            for s, e, t, st in grams:
                sc = max(name_score(st, name), name_score(st, core) * 0.97, acronym_score(st, core, lang),
                         name_score(st, own) * 0.9 if own else 0.0, abbrev_score(st, own or core, lang.function_words))
                if sc < 0.9 and len(core) >= 2 and st[0] not in lang.function_words and \
                        st[-1] not in lang.function_words and \
                        sorted(w for w in st if w not in lang.function_words) == sorted(core):
                    sc = 0.9  # the name's words in another order: "date of publication" / *publication date*
                if sc >= min_score and (best is None or sc > best.score or
                                        (sc == best.score and e - s > best.span[1] - best.span[0])):
                    best = Link(kind, iri, sc, (s, e), t, label=label)
            if best is not None:
                links.append(best)
    # a span that names a class names the class, not a key predicate spelt like it ("keeper" / *keeper id*)
    cls_spans = {(lk.span, round(lk.score, 3)) for lk in links if lk.kind == "class"}
    # (a predicate named by the same words written together, "allergy type" / *allergytype*, is the class's own
    # name column and stays)
    links = [lk for lk in links if lk.kind == "class" or lk.score >= 0.95 or
             not any(sp == lk.span and sc >= lk.score for sp, sc in cls_spans)]
    links.sort(key=lambda lk: (-lk.score, -(lk.span[1] - lk.span[0])))
    return links


def link_values(question: str, schema: SchemaMemory, cues: Cues, lang: LanguageProfile = ENGLISH) -> list[Link]:
    """Literal values of the store the question quotes: quoted strings first, then any n-gram that equals a
    value exactly (after normalisation); numbers are left to comparisons unless a value equals them."""
    out: list[Link] = []
    seen: set[tuple[int, int, str]] = set()
    spans = [(s, e, t, 1.0) for t, s, e in cues.quoted] + [(s, e, t, 0.9) for s, e, t in ngrams(question, 6)]
    # a number a comparison or "top k" reads is not a value to match ("heavier than 10")
    compared = {n[1] for n in cues.numbers if any(0 < n[1] - pos < 40 for _op, _v, pos in cues.comparisons)
                or cues.between or (cues.top_k is not None and n[0] == cues.top_k)}
    for s, e, text, base in spans:
        norm = normalize(text)
        if not norm or all(w in lang.function_words for w in norm.split()) or s in compared:
            continue
        year = re.fullmatch(r"1[0-9]{3}|20[0-9]{2}", norm) is not None
        hits = schema.value_hits(norm)
        last = norm.split()[-1]
        if not hits and last != lang.singular(last):  # "lions" -> the value "lion"
            hits = schema.value_hits(" ".join(norm.split()[:-1] + [lang.singular(last)]))
        for hit in hits:
            key = (s, e, hit.predicate)
            if key in seen:
                continue
            seen.add(key)
            numeric = re.fullmatch(r"-?\d+(\.\d+)?", norm.replace(" ", ".")) is not None
            score = base * (0.6 if numeric else 1.0) * (1.0 if len(norm) > 2 else 0.7)
            if year:  # "born in 2015": a year-like predicate, not a weight that happens to equal 2015
                info = schema.predicates.get(hit.predicate)
                score *= 1.3 if info and (info.date or "year" in info.label.split()) else 0.6
            out.append(Link("value", hit.predicate, score, (s, e), text, hit.value, hit.datatype,
                            label=schema.predicates[hit.predicate].label if hit.predicate in schema.predicates
                            else ""))
    named = set(lang.stems(question)) - lang.function_words if cues.quoted else set()
    for text, s, e in cues.quoted:  # a quoted word inside longer values: "an enclosure with 'House' in its name"
        norm = normalize(text)
        if not norm or any(lk.span == (s, e) for lk in out):
            continue
        preds: dict[str, int] = {}
        for key, hits in schema.values.items():
            if norm in key:
                for p, n, _v, _dt in hits:
                    preds[p] = preds.get(p, 0) + n
        for p in _named_first(preds, schema, named, lang)[:3]:
            out.append(Link("value", p, 0.8, (s, e), text, text, None, label=schema.predicates[p].label
                            if p in schema.predicates else "", op="contains"))
    # a word that is a whole word of several values of one few-valued predicate ("wild food": the sources *wild
    # sea*, *wild ocean*): any value containing it
    taken = [lk.span for lk in out]
    for m in re.finditer(r"[A-Za-z]{3,}", question):
        word, span = m.group(0).lower(), (m.start(), m.end())
        preds = _word_in_values(schema, lang).get(word, [])
        if not preds or word in lang.function_words or any(overlaps(span, sp) for sp in taken) or \
                lang.singular(word) in _schema_words(schema, lang):  # a class's own word, though names hold it
            continue
        for p, spelling in preds[:2]:  # CONTAINS compares characters: the word as the values write it
            out.append(Link("value", p, PART_OF_VALUE, span, m.group(0), spelling, None, op="contains",
                            label=schema.predicates[p].label if p in schema.predicates else ""))
    out.extend(_code_links(question, schema, [lk.span for lk in out], lang))
    out.sort(key=lambda lk: (-lk.score, -(lk.span[1] - lk.span[0])))
    return out


def _code_links(question: str, schema: SchemaMemory, taken: list[tuple[int, int]], lang: LanguageProfile
                ) -> list[Link]:
    """Values a predicate stores as short codes, named by the word they shorten: "female" for *F*, "Florida" for
    *FL* (the word's first letter, then letters of it in order), "New York" for *NY* (initials). Weak links
    (CODE_VALUE): every word starting with F would otherwise be a woman."""
    codes = _code_values(schema)
    if not codes:
        return []
    words = [(m.group(0), m.start(), m.end()) for m in re.finditer(r"[A-Za-z]+", question)]
    spans = [(w.lower(), s, e, False) for w, s, e in words]
    spans += [((w1[0] + w2[0]).lower(), s1, e2, True) for (w1, s1, e1), (w2, s2, e2) in zip(words, words[1:], strict=False)
              if w1[:1].isupper() and w2[:1].isupper() and question[e1:s2] == " "]
    out: list[Link] = []
    schema_words = _schema_words(schema, lang)
    for word, s, e, initials in spans:
        if not initials and (len(word) < 4 or word in lang.function_words or lang.singular(word) in schema_words):
            continue
        if any(overlaps((s, e), sp) for sp in taken):
            continue
        # a name (capitalised) may keep later letters ("Texas" TX); any other word only its first letter ("money"
        # is no MO)
        name = question[s].isupper()
        found = [(code, hits) for code, hits in codes.items()
                 if (code == word if initials else len(code) == 1 and word.startswith(code) or name and (
                     word.startswith(code) or abbreviates(code, word)
                     or (len(code) == 2 and code[0] == word[0] and code[1] in word[2:])))]
        found.sort(key=lambda kv: (not word.startswith(kv[0]), -len(kv[0])))
        for _code, hits in found[:2]:
            for p, value, dt in hits[:2]:
                out.append(Link("value", p, CODE_VALUE, (s, e), question[s:e], value, dt, variant=True,
                                label=schema.predicates[p].label if p in schema.predicates else ""))
    return out


def is_letter_code(lk: Link) -> bool:
    """A value linked by the first letter of a word (`_code_links`: "female" for *F*)."""
    return lk.kind == "value" and lk.variant and lk.value is not None and len(lk.value) == 1


def _code_values(schema: SchemaMemory) -> dict[str, list[tuple[str, str, str | None]]]:
    """code (lower case) -> (predicate, value, datatype) for the predicates whose text values (two to
    MAX_CATEGORIES of them) are all upper-case codes of one to three letters; built once per schema memory."""
    cached = _CODES.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    per_pred: dict[str, list[tuple[str, str, str | None]]] = {}
    other: set[str] = set()
    for key, hits in schema.values.items():
        for p, _n, value, dt in hits:
            if re.fullmatch(r"[A-Z]{1,3}", value) and key == value.lower():
                per_pred.setdefault(p, []).append((key, value, dt))
            elif not re.fullmatch(r"-?[\d.]+", value):
                other.add(p)
    out: dict[str, list[tuple[str, str, str | None]]] = {}
    for p, rows in per_pred.items():
        if p not in other and 2 <= len(rows) <= MAX_CATEGORIES:
            for key, value, dt in rows:
                out.setdefault(key, []).append((p, value, dt))
    _CODES.clear()
    _CODES[id(schema)] = (schema, out)
    return out


def _named_first(preds: dict[str, int], schema: SchemaMemory, named: set[str], lang: LanguageProfile) -> list[str]:
    """Predicates (with their number of matching values) the question names first ("'a' in their names"), then
    those of a class it names, then those with the most matching values."""
    def rank(kv: tuple[str, int]) -> tuple[bool, bool, int]:
        info = schema.predicates.get(kv[0])
        if info is None:
            return True, True, -kv[1]
        domain_words = {w for d in info.domains for w in lang.stems(schema.class_label(d))}
        own = bool(named & domain_words)
        # its own words, not its class's ("shop name" is named by "name", not by "shops")
        return not named & (set(lang.stems(info.label)) - domain_words), not own, -kv[1]

    return [p for p, _n in sorted(preds.items(), key=rank)]


PART_OF_VALUE = 0.45  # the score of a word matched inside several values, below an exact value's
MAX_CATEGORIES = 50  # a predicate with more distinct text values is a name, not a category
CODE_VALUE = 0.5  # a value named by the word its code shortens ("female" for F)
_WORD_VALUES: dict[int, tuple[SchemaMemory, LanguageProfile, dict[str, list[tuple[str, str]]]]] = {}
_CODES: dict[int, tuple[SchemaMemory, dict[str, list[tuple[str, str, str | None]]]]] = {}


def _schema_words(schema: SchemaMemory, lang: LanguageProfile = ENGLISH) -> set[str]:
    """The words of the schema's class and predicate names (singular)."""
    names = [schema.class_label(c) for c in schema.classes] + [i.label for i in schema.predicates.values()]
    return {lang.singular(w) for name in names for w in normalize(name).split()}


def _word_in_values(schema: SchemaMemory, lang: LanguageProfile = ENGLISH) -> dict[str, list[tuple[str, str]]]:
    """word -> (predicate, the word as its values write it) for predicates with at most MAX_CATEGORIES distinct
    text values, two or more (not all) of which have the word as a whole word; built once per schema memory."""
    cached = _WORD_VALUES.get(id(schema))
    if cached is not None and cached[0] is schema and cached[1] is lang:
        return cached[2]
    per_pred: dict[str, int] = {}
    per_word: dict[tuple[str, str], int] = {}
    for key, hits in schema.values.items():
        if not re.search(r"[a-z]", key):
            continue
        for p, *_rest in hits:
            per_pred[p] = per_pred.get(p, 0) + 1
            for w in set(key.split()):
                if len(w) >= 3 and w not in lang.function_words:
                    per_word[(w, p)] = per_word.get((w, p), 0) + 1
    kept = [(w, p) for (w, p), n in sorted(per_word.items(), key=lambda kv: -kv[1])
            if 2 <= n < per_pred[p] <= MAX_CATEGORIES]
    # the word as the kept predicates' values write it (CONTAINS compares characters): read for those alone
    spellings: dict[tuple[str, str], Counter[str]] = {pair: Counter() for pair in kept}
    few_valued = {p for _w, p in kept}
    for key, hits in schema.values.items():
        if not re.search(r"[a-z]", key):
            continue
        for p, _n, text, _dt in hits:
            if p not in few_valued:
                continue
            for w in set(key.split()):
                if (w, p) in spellings:
                    found = re.search(rf"(?<!\w){re.escape(w)}(?!\w)", str(text), re.IGNORECASE)
                    spellings[(w, p)][found.group(0) if found else w] += 1
    out: dict[str, list[tuple[str, str]]] = {}
    for w, p in kept:
        forms = spellings[(w, p)]
        out.setdefault(w, []).append((p, max(sorted(forms), key=lambda f: forms[f])))
    _WORD_VALUES.clear()  # one schema memory at a time (a translator holds one store)
    _WORD_VALUES[id(schema)] = (schema, lang, out)
    return out


def cue_spans(question: str, lang: LanguageProfile = ENGLISH) -> list[tuple[int, int]]:
    """Spans of the question that are structure words, never an entity, value or item-name word: a frequency
    word after most / least ("the most common enclosure"), a frequency superlative, a comparative before "than"."""
    out = []
    for m in lang.cue_span_re.finditer(question.lower()):
        g = next(i for i in (1, 2, 3) if m.group(i))
        out.append((m.start(g), m.end(g)))
    return out


def overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]
