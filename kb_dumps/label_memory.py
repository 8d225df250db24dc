"""The label memory: one row per KB id (id, kind, label, aliases, description, popularity), in SQLite.

Written by `kbqa ingest` in the same pass that loads the store; read by `grounding` and
`decompose`. SQLite because it is in the standard library, can be read while being written by
another process, and supports the upserts that `--append` needs.

Columns (documented in kb_dumps/README.md):
  rowid        stable integer key (used as the vector-index label)
  id           full IRI of the entity, property or class
  kind         entity | property | class
  label        preferred label (first seen in the preferred language)
  aliases      JSON list of other labels (aliases, labels in other languages)
  description  short description or comment ("" when none)
  popularity   number of statements with the id as subject or object (label triples excluded)
  generation   the ingest run that last changed the row (the vector index re-embeds newer rows)
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS labels (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL DEFAULT 'entity',
    label TEXT NOT NULL DEFAULT '',
    aliases TEXT NOT NULL DEFAULT '[]',
    description TEXT NOT NULL DEFAULT '',
    popularity INTEGER NOT NULL DEFAULT 0,
    generation INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""

KIND_RANK = {"entity": 0, "class": 1, "property": 2}


@dataclass
class LabelRow:
    id: str
    kind: str = "entity"
    label: str = ""
    aliases: list[str] = field(default_factory=list)
    description: str = ""
    popularity: int = 0
    rowid: int | None = None

    def to_dict(self) -> dict:
        return asdict(self)


class LabelMemory:
    """Read/write access to a label memory file."""

    def __init__(self, path: str | Path, readonly: bool = False):
        self.path = Path(path)
        if readonly:
            if not self.path.exists():
                raise FileNotFoundError(f"no label memory at {self.path}; run `kbqa ingest` first")
            uri = f"file:{self.path}?mode=ro"
            self.conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.conn = sqlite3.connect(self.path, check_same_thread=False)
            self.conn.executescript(SCHEMA)
            # Written only inside a fresh data directory that is discarded if the run fails,
            # so durability per statement buys nothing; the swap makes the whole file durable.
            self.conn.execute("PRAGMA journal_mode=OFF")
            self.conn.execute("PRAGMA synchronous=OFF")
        self.readonly = readonly

    # ---- reading -------------------------------------------------------------------------
    @staticmethod
    def _row(r: tuple) -> LabelRow:
        return LabelRow(rowid=r[0], id=r[1], kind=r[2], label=r[3], aliases=json.loads(r[4]),
                        description=r[5], popularity=r[6])

    _COLS = "rowid, id, kind, label, aliases, description, popularity"

    def get(self, iri: str) -> LabelRow | None:
        r = self.conn.execute(f"SELECT {self._COLS} FROM labels WHERE id = ?", (iri,)).fetchone()
        return self._row(r) if r else None

    def get_many(self, iris: Iterable[str]) -> dict[str, LabelRow]:
        return {r[1]: self._row(r) for r in self._rows_where("id", list(dict.fromkeys(iris)))}

    def by_rowids(self, rowids: Iterable[int]) -> dict[int, LabelRow]:
        return {r[0]: self._row(r) for r in self._rows_where("rowid", list(rowids))}

    def _rows_where(self, column: str, keys: list[str] | list[int]) -> Iterator[tuple]:
        """The raw rows whose `column` is one of `keys`, asked 500 keys at a time (SQLite's bound-parameter limit)."""
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            yield from self.conn.execute(
                f"SELECT {self._COLS} FROM labels WHERE {column} IN ({','.join('?' * len(chunk))})", chunk)

    def __len__(self) -> int:
        return self.conn.execute("SELECT COUNT(*) FROM labels").fetchone()[0]

    def iter_rows(self, since_generation: int = -1, batch: int = 5000) -> Iterator[LabelRow]:
        """All rows (or those changed after `since_generation`), in rowid order, streamed."""
        last = -1
        while True:
            rows = self.conn.execute(
                f"SELECT {self._COLS} FROM labels WHERE rowid > ? AND generation > ? ORDER BY rowid LIMIT ?",
                (last, since_generation, batch),
            ).fetchall()
            if not rows:
                return
            for r in rows:
                yield self._row(r)
            last = rows[-1][0]

    def count_since(self, since_generation: int) -> int:
        return self.conn.execute("SELECT COUNT(*) FROM labels WHERE generation > ?", (since_generation,)).fetchone()[0]

    @property
    def generation(self) -> int:
        r = self.conn.execute("SELECT value FROM meta WHERE key='generation'").fetchone()
        return int(r[0]) if r else 0

    def meta(self, key: str, default: str | None = None) -> str | None:
        r = self.conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return r[0] if r else default

    # ---- writing (ingest only) -------------------------------------------------------------
    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                          (key, value))

    def begin_generation(self) -> int:
        gen = self.generation + 1
        self.set_meta("generation", str(gen))
        return gen

    def add_popularity(self, counts: dict[str, int], generation: int) -> None:
        self.conn.executemany(
            "INSERT INTO labels(id, popularity, generation) VALUES(?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET popularity = popularity + excluded.popularity",
            ((k, v, generation) for k, v in counts.items()),
        )

    def merge_texts(self, texts: dict[str, dict], generation: int) -> None:
        """Merge labels/aliases/descriptions/kinds collected from a batch of triples.

        texts[id] = {"label": str|None, "aliases": [..], "description": str|None, "kind": str|None}
        A row keeps its first label and description; new aliases are appended; a kind only
        moves up entity < class < property (a property is never demoted to an entity).
        """
        cur = self.conn.cursor()
        existing = self.get_many(texts)
        updates = []
        for iri, t in texts.items():
            row = existing.get(iri) or LabelRow(id=iri)
            label = row.label or (t.get("label") or "")
            aliases = list(row.aliases)
            for a in ([t["label"]] if t.get("label") and t["label"] != label else []) + t.get("aliases", []):
                if a and a != label and a not in aliases:
                    aliases.append(a)
            description = row.description or (t.get("description") or "")
            kind = row.kind
            if t.get("kind") and KIND_RANK[t["kind"]] > KIND_RANK.get(kind, 0):
                kind = t["kind"]
            updates.append((iri, kind, label, json.dumps(aliases, ensure_ascii=False), description, generation))
        cur.executemany(
            "INSERT INTO labels(id, kind, label, aliases, description, generation) VALUES(?,?,?,?,?,?) "
            "ON CONFLICT(id) DO UPDATE SET kind=excluded.kind, label=excluded.label, aliases=excluded.aliases, "
            "description=excluded.description, generation=excluded.generation",
            updates,
        )

    def fill_missing_labels(self, make_label: Callable[[str], str], generation: int) -> int:
        """Give rows of this generation that have no label one made from their id (see the profile)."""
        rows = self.conn.execute("SELECT rowid, id FROM labels WHERE label = '' AND generation = ?",
                                 (generation,)).fetchall()
        updates = [(lab, rowid) for rowid, iri in rows if (lab := make_label(iri))]
        self.conn.executemany("UPDATE labels SET label = ? WHERE rowid = ?", updates)
        return len(updates)

    def commit(self) -> None:
        self.conn.commit()

    def close(self) -> None:
        try:
            self.conn.commit()
        except sqlite3.Error:
            pass
        self.conn.close()
