"""Build the bundled sample dumps in kb_dumps/samples/ from the public data in ../shared/data.

Run once by a maintainer (`python -m kb_dumps.build_samples --shared ../shared/data`); the
outputs are committed so that a fresh machine needs no ../shared. Licenses and attributions
are in kb_dumps/README.md.

wikidata-mini.nt.gz:
  - SimpleQuestions-Wikidata answerable triples of all splits (`R123` = inverse of `P123`:
    written with subject and object swapped, as `wdt:P123`);
  - CoDEx triples (all sizes and splits, deduplicated) as `wdt:` statements;
  - English (and Russian) labels of the entities of the label maps (SimpleQuestions, LC-QuAD 2.0),
    kept even when the store has no other triple about them (grounding and decompose need them);
  - labels, descriptions and aliases of all Wikidata properties, CoDEx type labels/descriptions.
bestiary.rdf.gz: the BESTIARY KG (RDF/XML) as published.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import shutil
from pathlib import Path

from kb_dumps.profiles import RDF, RDFS, SCHEMA, SKOS, WIKIDATA_PREFIXES

WD, WDT = WIKIDATA_PREFIXES["wd"], WIKIDATA_PREFIXES["wdt"]
SAMPLES = Path(__file__).parent / "samples"


def nt_literal(value: str, lang: str) -> str:
    """An N-Triples literal with the escapes the grammar requires."""
    esc = (value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r"))
    return f'"{esc}"@{lang}'


def iri(x: str) -> str:
    return f"<{x}>"


def _valid_qid(x: str) -> bool:
    return len(x) > 1 and x[0] in "QP" and x[1:].isdigit()


def build_wikidata_mini(shared: Path, out: Path) -> dict[str, int]:
    wd_dir = shared / "wikidata"
    lines: list[str] = []
    facts, sq_facts = _wikidata_facts(shared, wd_dir)
    for s, p, o in sorted(facts):
        lines.append(f"{iri(WD + s)} {iri(WDT + p)} {iri(WD + o)} .")
    labels, descriptions, prop_aliases = _wikidata_labels(wd_dir)
    label_triples = 0
    for qid in sorted(labels, key=lambda q: (q[0], int(q[1:]))):
        subj = iri(WD + qid)
        if qid.startswith("P"):
            lines.append(f"{subj} {iri(RDF + 'type')} {iri(WIKIDATA_PREFIXES['wikibase'] + 'Property')} .")
        for lang, names in labels[qid].items():
            lines.append(f"{subj} {iri(RDFS + 'label')} {nt_literal(names[0], lang)} .")
            label_triples += 1
            for extra in names[1:]:
                lines.append(f"{subj} {iri(SKOS + 'altLabel')} {nt_literal(extra, lang)} .")
        for alias in prop_aliases.get(qid, []):
            lines.append(f"{subj} {iri(SKOS + 'altLabel')} {nt_literal(alias, 'en')} .")
        if qid in descriptions:
            lines.append(f"{subj} {iri(SCHEMA + 'description')} {nt_literal(descriptions[qid], 'en')} .")
    out.parent.mkdir(parents=True, exist_ok=True)
    # mtime=0 makes the gzip output reproducible byte for byte.
    with open(out, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as gz:
        gz.write(("\n".join(lines) + "\n").encode("utf-8"))
    return {"lines": len(lines), "facts": len(facts), "simplequestions_facts": sq_facts,
            "labelled_ids": len(labels), "label_triples": label_triples}


def _wikidata_facts(shared: Path, wd_dir: Path) -> tuple[set[tuple[str, str, str]], int]:
    """The (subject, property, object) ids of the SimpleQuestions answerable triples and CoDEx, and how many came
    from SimpleQuestions."""
    facts: set[tuple[str, str, str]] = set()
    # SimpleQuestions answerable triples; R = inverse.
    with open(shared / "simplequestions-wikidata" / "answerable_triples_all_splits.tsv", encoding="utf-8") as f:
        for row in csv.reader(f, delimiter="\t"):
            if len(row) < 3:
                continue
            s, p, o = row[0].strip(), row[1].strip(), row[2].strip()
            if p.startswith("R"):
                s, p, o = o, "P" + p[1:], s
            if _valid_qid(s) and _valid_qid(o) and p[1:].isdigit():
                facts.add((s, p, o))
    sq_facts = len(facts)
    # CoDEx triples.
    for path in sorted((wd_dir / "codex" / "triples").glob("*/*.txt")):
        with open(path, encoding="utf-8") as f:
            for row in csv.reader(f, delimiter="\t"):
                if len(row) >= 3 and _valid_qid(row[0]) and _valid_qid(row[2]):
                    facts.add((row[0], row[1], row[2]))
    return facts, sq_facts


def _wikidata_labels(wd_dir: Path) -> tuple[dict[str, dict[str, list[str]]], dict[str, str], dict[str, list[str]]]:
    """Labels (id -> language -> names, the first one the label), descriptions and property aliases, from the
    label files of the shared Wikidata folder."""
    # Entity labels: qid -> [labels] per language.
    labels: dict[str, dict[str, list[str]]] = {}

    def add_label(qid: str, label: str, lang: str) -> None:
        qid = qid.strip().upper()
        if _valid_qid(qid) and isinstance(label, str) and label.strip():
            bucket = labels.setdefault(qid, {}).setdefault(lang, [])
            if label not in bucket:
                bucket.append(label)

    for qid, label in json.loads((wd_dir / "entity_labels_lcquad2.json").read_text(encoding="utf-8")).items():
        add_label(qid, label, "en")
    for label, qid in json.loads((wd_dir / "entity_labels_simplequestions_en.json").read_text(encoding="utf-8")).items():
        add_label(qid, label, "en")
    for label, qid in json.loads((wd_dir / "entity_labels_simplequestions_ru.json").read_text(encoding="utf-8")).items():
        add_label(qid, label, "ru")
    # CoDEx types: labels and descriptions.
    descriptions: dict[str, str] = {}
    for qid, info in json.loads((wd_dir / "codex" / "types" / "en" / "types.json").read_text(encoding="utf-8")).items():
        add_label(qid, info.get("label", ""), "en")
        if info.get("description"):
            descriptions[qid] = info["description"]
    # Properties: labels, descriptions, aliases.
    prop_aliases: dict[str, list[str]] = {}
    for p in json.loads((wd_dir / "properties_with_descriptions.json").read_text(encoding="utf-8")):
        add_label(p["id"], p["label"], "en")
        if p.get("description"):
            descriptions[p["id"]] = p["description"]
        prop_aliases[p["id"]] = [a for a in p.get("aliases", []) if a]
    for pid, info in json.loads((wd_dir / "codex" / "relations" / "en" / "relations.json").read_text(encoding="utf-8")).items():
        add_label(pid, info.get("label", ""), "en")
        if info.get("description") and pid not in descriptions:
            descriptions[pid] = info["description"]
    with open(wd_dir / "properties_all_labels.tsv", encoding="utf-8") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            add_label(row["pid"], row.get("label_en") or "", "en")
    for pid, label in json.loads((wd_dir / "property_labels_lcquad2.json").read_text(encoding="utf-8")).items():
        add_label(pid, label, "en")
    return labels, descriptions, prop_aliases


def build_bestiary(shared: Path, out: Path) -> dict[str, int]:
    src = shared / "bestiary" / "beastiary_kg.rdf"
    with open(src, "rb") as f, open(out, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9,
                                                                     mtime=0) as gz:
        shutil.copyfileobj(f, gz)
    return {"bytes": src.stat().st_size}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data",
                    help="the shared data folder (default: ../shared/data next to the project)")
    ap.add_argument("--out", type=Path, default=SAMPLES)
    args = ap.parse_args()
    print("wikidata-mini:", build_wikidata_mini(args.shared, args.out / "wikidata-mini.nt.gz"))
    print("bestiary:", build_bestiary(args.shared, args.out / "bestiary.rdf.gz"))


if __name__ == "__main__":
    main()
