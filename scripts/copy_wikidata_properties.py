"""Copy the Wikidata property names the `structure` translator scores slots with into the project.

Run from the repository root: `python scripts/copy_wikidata_properties.py [--shared ../shared/data]`.
Writes kbqa/translators/structure/properties.json.gz: {"P31": {"label": …, "aliases": […], "datatype": …}, …}
merged from `wikidata/properties_all_labels.tsv` (all 12,983 properties: label, datatype),
`wikidata/properties_with_descriptions.json` (2,430: aliases, description) and `wikidata/property_labels_lcquad2.json`
(9,471 labels of ~2020, where the others have none). Nothing at run time reads the shared folder.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "kbqa" / "translators" / "structure" / "properties.json.gz"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args()
    wd = args.shared / "wikidata"
    props: dict[str, dict] = {}
    with open(wd / "properties_all_labels.tsv", encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            props[row["pid"]] = {"label": row["label_en"] or "", "aliases": [], "datatype": row["datatype"] or ""}
    for item in json.loads((wd / "properties_with_descriptions.json").read_text(encoding="utf-8")):
        entry = props.setdefault(item["id"], {"label": item.get("label") or "", "aliases": [], "datatype": ""})
        entry["label"] = entry["label"] or item.get("label") or ""
        entry["aliases"] = sorted({a for a in item.get("aliases") or [] if a and a != entry["label"]})
        entry["description"] = item.get("description") or ""
    for pid, label in json.loads((wd / "property_labels_lcquad2.json").read_text(encoding="utf-8")).items():
        entry = props.setdefault(pid, {"label": "", "aliases": [], "datatype": ""})
        if not entry["label"]:
            entry["label"] = label
        elif label and label != entry["label"] and label not in entry["aliases"]:
            entry["aliases"].append(label)  # an older name of the property: questions of that time use it
    props = {k: v for k, v in sorted(props.items(), key=lambda kv: int(kv[0][1:])) if v["label"]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(args.out, "wt", encoding="utf-8") as f:
        json.dump(props, f, ensure_ascii=False, separators=(",", ":"))
    print(f"{len(props)} properties -> {args.out} ({args.out.stat().st_size // 1024} KiB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
