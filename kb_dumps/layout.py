"""Where things live inside a store directory made by `kbqa ingest`.

    DIR/current -> data-000002      symlink, replaced atomically when a new version is ready
    DIR/data-000002/oxigraph/       the pyoxigraph store
    DIR/data-000002/labels.sqlite   the label memory
    DIR/data-000002/manifest.json   profile, sources (content hashes), counts
    DIR/data-000002/index/          grounding indexes (vector + lexical), built by `kbqa index`
    DIR/data-000002/schema/         schema + value memory (grounding/schema.py), built by `kbqa index` or on first use
    DIR/.lock                       held by the one process that writes

A *remote* store directory (`kbqa ingest --endpoint URL --store DIR`) has the same layout without
`oxigraph/`: its triples stay on a SPARQL endpoint, recorded in the manifest as
`"endpoint": {"url": URL, "dialect": "generic"|"wdqs"|…}` (credentials never: they come from the
environment). `--store DIR` alone then sends queries to that endpoint (kb_dumps.store.open_store).
An interrupted endpoint ingestion keeps its progress in `DIR/.endpoint-building/` until a rerun
resumes it.

Writers build a new data directory beside the live one and swap the `current` link, so a
reader never sees a half-written store and a failed run leaves the store as it was.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from kb_dumps.stage_errors import IngestError, StoreError

# Names that make a folder a store (one of them is enough); a folder with other things in it and none of these
# is someone's folder, never written into. A bare oxigraph/ + manifest.json is an older store layout.
STORE_MARKS = re.compile(r"current|\.lock|data-\d+|\.building-.+|\.endpoint-building|oxigraph|manifest\.json")
IGNORED = frozenset({".DS_Store", "Thumbs.db", "desktop.ini"})  # what a file browser leaves in an empty folder


@dataclass(frozen=True)
class StoreLayout:
    root: Path

    @classmethod
    def of(cls, path: str | Path) -> StoreLayout:
        return cls(Path(path))

    @property
    def current(self) -> Path:
        """The live data directory (resolved now; it changes when a writer swaps versions)."""
        link = self.root / "current"
        if link.is_symlink() or link.is_dir():
            return link.resolve()
        # A bare directory with oxigraph/ inside (made by hand or by an older version) works too.
        return self.root

    @property
    def lock_path(self) -> Path:
        return self.root / ".lock"

    @property
    def oxigraph(self) -> Path:
        return self.current / "oxigraph"

    @property
    def labels(self) -> Path:
        return self.current / "labels.sqlite"

    @property
    def manifest_path(self) -> Path:
        return self.current / "manifest.json"

    @property
    def index_dir(self) -> Path:
        return self.current / "index"

    @property
    def endpoint_building(self) -> Path:
        """Where an endpoint ingestion keeps its label memory and progress until it completes."""
        return self.root / ".endpoint-building"

    def check_target(self) -> None:
        """Refuse to write a store at a path that is a file, or into a folder that holds other things and is not
        a store (a mistyped --store would otherwise put a store among someone's files)."""
        if self.root.exists() and not self.root.is_dir():
            raise IngestError(f"{self.root} is a file, not a store directory; give a new or empty folder for the "
                              "store", stage="usage")
        if not self.root.is_dir():
            return
        names = [p.name for p in self.root.iterdir() if p.name not in IGNORED]
        if names and not any(STORE_MARKS.fullmatch(n) for n in names):
            shown = ", ".join(sorted(names)[:3]) + (", …" if len(names) > 3 else "")
            raise IngestError(f"{self.root} is a folder with other files in it ({shown}), not a kbqa store; give a "
                              "new or empty folder for the store (or an existing store)", stage="usage")

    def exists(self) -> bool:
        if not self.manifest_path.is_file():
            return False
        return self.oxigraph.is_dir() or self.endpoint is not None

    @property
    def endpoint(self) -> dict | None:
        """`{"url": …, "dialect": …}` for a remote store directory, None for a local one."""
        if not self.manifest_path.is_file():
            return None
        endpoint = self.manifest().get("endpoint")
        return endpoint if isinstance(endpoint, dict) and endpoint.get("url") else None

    def manifest(self) -> dict:
        if not self.manifest_path.is_file():
            raise StoreError(f"no store at {self.root}; build one with `kbqa ingest SOURCE --store {self.root}` "
                             "or `kbqa ingest --sample wikidata-mini`")
        return json.loads(self.manifest_path.read_text(encoding="utf-8"))

    @property
    def profile_name(self) -> str:
        return self.manifest().get("profile", "generic")
