"""The `ids` phase of `kbqa ingest --endpoint` (every IRI subject or object), paged by predicate.

One keyset page over the whole KG (`SELECT DISTINCT ?key … ORDER BY STR(?key)`) makes the engine scan
and sort every triple for every page: on a 3.3M-triple endpoint one page ran past a 300 s timeout.
Instead the predicates the `predicates` phase found (with their numbers of uses) are packed, in IRI
order, into groups whose ids fit one page (a predicate's uses bound its distinct subjects and objects:
at most 2 × uses); each group is one query on the engine's predicate index (`VALUES ?p { … }`), and a
predicate too large for one page is a group of its own, paged by key among its own triples only. So a
request touches at most one page's worth of triples, except on a predicate larger than a page, where it
sorts that predicate's triples (the largest such on the Spider KGs: `rdf:type`).

The ids collected go to a staging table (`endpoint_ids`, sorted by its primary key) in the same SQLite
transaction as the progress, and, when the last group is done, into the label memory in id order: the
rows and their rowids are those the whole-KG pages gave. Both staging tables are dropped at the end.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass

STAGING_SCHEMA = """
CREATE TABLE IF NOT EXISTS endpoint_predicates (iri TEXT PRIMARY KEY, uses INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS endpoint_ids (id TEXT PRIMARY KEY) WITHOUT ROWID;
"""
MAX_GROUP_PREDICATES = 1_000  # keeps a group's query text (its VALUES list) to ~100 KB
_CHUNK = 5_000  # predicates read from the staging table at a time


@dataclass(frozen=True)
class PredicateGroup:
    """Consecutive predicates (IRI order) queried together; `bound`: at most this many distinct ids."""

    predicates: tuple[str, ...]
    bound: int

    @property
    def first(self) -> str:
        return self.predicates[0]

    @property
    def last(self) -> str:
        return self.predicates[-1]


@dataclass(frozen=True)
class IdsProgress:
    """Where the ids phase stands, kept as JSON in the progress's `after`: predicates up to `done` are complete;
    the group `first`..`last` is read up to the key `key` (all three empty between groups)."""

    done: str = ""
    first: str = ""
    last: str = ""
    key: str = ""

    def dumps(self) -> str:
        return json.dumps([self.done, self.first, self.last, self.key], ensure_ascii=False)

    @classmethod
    def loads(cls, text: str) -> IdsProgress:
        return cls(*json.loads(text)) if text else cls()


def create_staging(conn: sqlite3.Connection) -> None:
    conn.executescript(STAGING_SCHEMA)


def record_predicates(conn: sqlite3.Connection, uses: dict[str, int]) -> None:
    """The predicates of one `predicates` page with their numbers of uses (a rerun of the page replaces them)."""
    conn.executemany("INSERT OR REPLACE INTO endpoint_predicates(iri, uses) VALUES(?, ?)", uses.items())


def record_ids(conn: sqlite3.Connection, ids: list[str]) -> None:
    conn.executemany("INSERT OR IGNORE INTO endpoint_ids(id) VALUES(?)", ((i,) for i in ids))


def predicate_count(conn: sqlite3.Connection, through: str | None = None) -> int:
    """The number of predicates staged (up to and including `through`: those done)."""
    if through is None:
        return conn.execute("SELECT COUNT(*) FROM endpoint_predicates").fetchone()[0]
    return conn.execute("SELECT COUNT(*) FROM endpoint_predicates WHERE iri <= ?", (through,)).fetchone()[0]


def _predicates_after(conn: sqlite3.Connection, after: str) -> Iterator[tuple[str, int]]:
    """(iri, uses) in IRI order after `after`, read in chunks (no cursor held open across the page writes)."""
    while True:
        chunk = conn.execute("SELECT iri, uses FROM endpoint_predicates WHERE iri > ? ORDER BY iri LIMIT ?",
                             (after, _CHUNK)).fetchall()
        if not chunk:
            return
        yield from chunk
        after = chunk[-1][0]


def predicate_groups(conn: sqlite3.Connection, limit: int, progress: IdsProgress) -> Iterator[PredicateGroup]:
    """The groups still to read: first the one `progress` is inside (exactly as it was, so that its key still
    applies), then consecutive predicates after it, packed while their bound stays under `limit`."""
    done = progress.done
    if progress.first:
        members = conn.execute("SELECT iri, uses FROM endpoint_predicates WHERE iri >= ? AND iri <= ? ORDER BY iri",
                               (progress.first, progress.last)).fetchall()
        yield PredicateGroup(tuple(p for p, _ in members), sum(2 * u for _, u in members))
        done = progress.last
    group: list[str] = []
    bound = 0
    for iri, uses in _predicates_after(conn, done):
        b = 2 * max(uses, 0)
        if group and (bound + b >= limit or len(group) >= MAX_GROUP_PREDICATES):
            yield PredicateGroup(tuple(group), bound)
            group, bound = [], 0
        group.append(iri)
        bound += b
    if group:
        yield PredicateGroup(tuple(group), bound)


def transfer_ids(conn: sqlite3.Connection, generation: int) -> int:
    """The staged ids into the label memory in id order (new rows: entities with no text, as the whole-KG pages
    wrote them; rows already there keep what they have). Returns the number staged."""
    conn.execute("INSERT OR IGNORE INTO labels(id, generation) SELECT id, ? FROM endpoint_ids ORDER BY id",
                 (generation,))
    return conn.execute("SELECT COUNT(*) FROM endpoint_ids").fetchone()[0]


def drop_staging(conn: sqlite3.Connection) -> bool:
    """Drop the staging tables; True when they held rows (the file then has free pages worth a VACUUM)."""
    held = any(conn.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone()  # noqa: S608 - fixed table names
               for t in ("endpoint_predicates", "endpoint_ids"))
    conn.execute("DROP TABLE IF EXISTS endpoint_predicates")
    conn.execute("DROP TABLE IF EXISTS endpoint_ids")
    return held
