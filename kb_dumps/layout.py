"""Where things live inside a store directory made by `kbqa ingest`.

    DIR/current -> data-000002      symlink, replaced atomically when a new version is ready
    DIR/data-000002/oxigraph/       the pyoxigraph store
    DIR/data-000002/labels.sqlite   the label memory
    DIR/data-000002/manifest.json   profile, sources (content hashes), counts
    DIR/data-000002/index/          grounding indexes (vector + lexical), built by `kbqa index`
    DIR/.lock                       held by the one process that writes

Writers build a new data directory beside the live one and swap the `current` link, so a
reader never sees a half-written store and a failed run leaves the store as it was.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from kb_dumps.errors import StoreError


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

    def exists(self) -> bool:
        return self.oxigraph.is_dir() and self.manifest_path.is_file()

    def manifest(self) -> dict:
        if not self.manifest_path.is_file():
            raise StoreError(f"no store at {self.root}; build one with `kbqa ingest SOURCE --store {self.root}` "
                             "or `kbqa ingest --sample wikidata-mini`")
        return json.loads(self.manifest_path.read_text(encoding="utf-8"))

    @property
    def profile_name(self) -> str:
        return self.manifest().get("profile", "generic")
