"""`kbqa ingest --endpoint URL`: the label memory of a KB that lives on a SPARQL endpoint; no triples copied.

The phases of kb_dumps/endpoint_queries.py run in turn, each paged by key (`STR(?key) > last`; the
`ids` phase per group of predicates, kb_dumps/endpoint_ids.py). Every page is written to `DIR/.endpoint-building/labels.sqlite` in one SQLite transaction *together with*
the progress (phase, last key), so a run killed at any point resumes after its last complete page
and writes each row exactly once. A complete run becomes a new version of DIR like a dump ingestion
(`current` switched atomically), with a manifest recording the endpoint, so that `--store DIR` then
sends queries there; `kbqa index` builds the grounding index from the memory as usual.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kb_dumps.endpoint import EndpointStore
from kb_dumps.endpoint_ids import (
    IdsProgress,
    PredicateGroup,
    create_staging,
    drop_staging,
    predicate_count,
    predicate_groups,
    transfer_ids,
)
from kb_dumps.endpoint_pages import write_page
from kb_dumps.endpoint_queries import PHASES, profile_values, queries_for, render, template
from kb_dumps.ingest import MANIFEST_FORMAT, _clean_stale, _next_version, publish_version, store_lock
from kb_dumps.json_types import JsonObject
from kb_dumps.label_memory import LabelMemory
from kb_dumps.layout import StoreLayout
from kb_dumps.profiles import KBProfile, detect_profile, get_profile
from kb_dumps.sparql_text import IRIREF, escape_string, iri
from kb_dumps.stage_errors import IngestError, KBQAError

if TYPE_CHECKING:
    from kb_dumps.store import EndpointOption

PROGRESS_KEY = "endpoint_ingest"
MAX_PAGE_ROWS = 1_000_000  # a page grows (doubling) while one key fills it, up to this


@dataclass
class EndpointIngestReport:
    store: str
    endpoint: str
    profile: str
    complete: bool  # False: stopped by max_pages; rerun to resume
    resumed: bool
    label_rows: int = 0
    pages: int = 0  # pages of this run
    rows_read: int = 0  # result rows of this run
    seconds: float = 0.0
    phases: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def rows_per_s(self) -> float:
        return self.rows_read / self.seconds if self.seconds else 0.0

    def to_dict(self) -> dict:
        return {**asdict(self), "rows_per_s": self.rows_per_s}


def ingest_endpoint(endpoint: str, store: str | Path, *, profile: str | None = None,
                    languages: tuple[str, ...] = ("en",), dialect: str | None = None, page_size: int = 50_000,
                    id_batch: int = 500, all_ids: bool = False, replace: bool = False, restart: bool = False,
                    max_pages: int | None = None, timeout_s: float = 300.0, progress: bool | None = None,
                    wait: bool = False, endpoint_options: dict[str, EndpointOption] | None = None) -> EndpointIngestReport:
    """Page labels, aliases, descriptions, kinds and popularity out of `endpoint` into the label memory of
    the remote store directory `store`. Resumes an interrupted run with the same settings."""
    if page_size < 1 or id_batch < 1:
        raise IngestError("--page-size and the id batch must be at least 1", stage="usage")
    root = Path(store)
    if profile is not None:
        get_profile(profile)  # an unknown name or a bad file: refused before the store folder is made
    sparql = EndpointStore(endpoint, timeout_s=timeout_s, row_cap=MAX_PAGE_ROWS, dialect=dialect,
                           **(endpoint_options or {}))
    with store_lock(root, wait=wait):
        live = StoreLayout.of(root)
        if live.exists() and not replace:
            what = f"the remote store of {live.endpoint['url']}" if live.endpoint else "a local store"
            raise IngestError(f"{root} already holds {what}; pass --replace to rebuild its label memory from "
                              f"{endpoint}", stage="usage")
        sparql.identify()  # the engine's page limits (Virtuoso: 10,000 sorted rows) before the first page
        prof = get_profile(profile) if profile else _detect(sparql)
        queries = queries_for(prof)
        unknown = {k for k in queries if k.split("_")[0] not in PHASES}
        if unknown:
            raise IngestError(f"unknown endpoint query names {sorted(unknown)}; phases: {', '.join(PHASES)}",
                              stage="usage")
        # a JSON profile is recorded by its absolute path, so that the store directory finds it again
        named = str(Path(profile).resolve()) if profile and profile.endswith(".json") else (profile or prof.name)
        settings = {"endpoint": endpoint, "dialect": sparql.dialect.name, "profile": named,
                    "languages": list(languages), "all_ids": all_ids,
                    "queries": hashlib.sha256(json.dumps(queries, sort_keys=True).encode()).hexdigest()}
        run = _Run(root, sparql, prof, queries, languages, settings, page_size, id_batch, all_ids, progress)
        resumed = run.open(replace=replace, restart=restart)
        try:
            complete = run.run_phases(max_pages)
            if not complete:
                return run.report(complete=False, resumed=resumed)
            run.finish()
        finally:
            run.close()
        return run.report(complete=True, resumed=resumed)


def _detect(sparql: EndpointStore) -> KBProfile:
    """The profile from a sample of the endpoint's predicates (wdqs: Wikidata without asking)."""
    if sparql.dialect.name == "wdqs":
        return get_profile("wikidata")
    res = sparql.query("SELECT ?p WHERE { ?s ?p ?o } LIMIT 500", row_cap=500)
    return get_profile(detect_profile([r[0]["value"] for r in res.rows if r and r[0]]))


class _Run:
    """One ingestion into `DIR/.endpoint-building`: its memory, its progress, its phases."""

    def __init__(self, root: Path, sparql: EndpointStore, profile: KBProfile, queries: dict[str, str],
                 languages: tuple[str, ...], settings: JsonObject, page_size: int, id_batch: int,
                 all_ids: bool, progress: bool | None):
        self.root, self.sparql, self.profile, self.queries = root, sparql, profile, queries
        self.languages, self.settings = languages, settings
        self.page_size, self.id_batch = page_size, id_batch
        try:
            self.values = profile_values(profile, languages)
        except ValueError as e:
            raise IngestError(f"the profile cannot be written into a query: {e}", stage="usage") from None
        self.phases = [p for p in PHASES if p != "ids" or all_ids or profile.labels_from_local_names]
        if not self.values["kind_types"]:
            self.phases.remove("typed")
        self.show = sys.stderr.isatty() if progress is None else progress
        self.building = StoreLayout.of(root).endpoint_building
        self.t0 = time.perf_counter()
        self.pages = self.rows = 0
        self.phase_stats: dict[str, dict[str, float]] = {}
        self.memory: LabelMemory | None = None
        self.ids_status = ""  # the ids phase's progress bar suffix: predicates done / staged
        self.state: JsonObject = {}  # the resumable progress, kept as JSON in the label memory

    # ---- the building directory and its progress ------------------------------------------
    def open(self, replace: bool, restart: bool) -> bool:
        """Open (or create) the building memory; True when resuming an earlier run."""
        path = self.building / "labels.sqlite"
        if path.is_file() and not restart:
            memory = LabelMemory(path)
            state = json.loads(memory.meta(PROGRESS_KEY) or "{}")
            if state.get("settings") != self.settings:
                memory.close()
                if not replace and state.get("pages"):  # a run that got nothing is not worth keeping
                    raise IngestError(f"{self.building} holds an interrupted ingestion with other settings "
                                      f"({state.get('settings', {}).get('endpoint')}); pass --replace to discard "
                                      "it", stage="usage")
                shutil.rmtree(self.building)
            else:
                self.memory, self.state = memory, state
        elif self.building.exists():
            shutil.rmtree(self.building)
        resumed = self.memory is not None
        if self.memory is None:
            self.building.mkdir(parents=True)
            self.memory = LabelMemory(path)
            generation = self.memory.begin_generation()
            self.state = {"settings": self.settings, "generation": generation, "done": [], "phase": None,
                          "after": "", "pages": 0, "rows": 0}
        # A journal, unlike a dump ingestion's memory: a kill must leave the last committed page intact.
        self.memory.commit()  # pragmas cannot change inside the transaction begin_generation opened
        self.memory.conn.execute("PRAGMA journal_mode=WAL")
        self.memory.conn.execute("PRAGMA synchronous=NORMAL")
        create_staging(self.memory.conn)  # the ids phase's predicates and ids (dropped by finish)
        self._commit()
        return resumed

    def _commit(self) -> None:
        assert self.memory is not None
        self.memory.set_meta(PROGRESS_KEY, json.dumps(self.state, ensure_ascii=False))
        self.memory.commit()  # the page's rows and the progress, in one transaction

    def close(self) -> None:
        if self.memory is not None:
            self.memory.close()
            self.memory = None

    # ---- phases ----------------------------------------------------------------------------
    def run_phases(self, max_pages: int | None) -> bool:
        """Run the phases not yet done; False when max_pages stopped the run first."""
        from tqdm import tqdm

        for phase in self.phases:
            if phase in self.state["done"]:
                continue
            if self.state["phase"] != phase:
                self.state.update(phase=phase, after="")
            t0, rows0, pages0 = time.perf_counter(), self.rows, self.pages
            with tqdm(desc=f"{phase}", unit=" rows", unit_scale=True, file=sys.stderr, disable=not self.show,
                      mininterval=0.5) as bar:
                for rows, after in self._pages(phase):
                    self._write(phase, rows)
                    self.state["after"] = after
                    self.state["pages"] += 1
                    self.state["rows"] += len(rows)
                    self._commit()
                    self.pages += 1
                    self.rows += len(rows)
                    bar.update(len(rows))
                    if phase == "ids":
                        bar.set_postfix_str(self.ids_status, refresh=False)
                    if max_pages is not None and self.pages >= max_pages:
                        self._stat(phase, t0, rows0, pages0)
                        return False
            if phase == "ids":  # the staged ids into the memory, in the transaction that marks the phase done
                transfer_ids(self.memory.conn, int(self.state["generation"]))
            self.state["done"].append(phase)
            self.state.update(phase=None, after="")
            self._commit()
            self._stat(phase, t0, rows0, pages0)
        return True

    def _stat(self, phase: str, t0: float, rows0: int, pages0: int) -> None:
        secs = time.perf_counter() - t0
        self.phase_stats[phase] = {"pages": self.pages - pages0, "rows": self.rows - rows0, "seconds": round(secs, 3)}

    def _query(self, phase: str, values: dict[str, str], cap: int, where: str = "") -> list[list[dict | None]]:
        try:
            text = render(template(self.queries, phase, self.sparql.dialect.name), {**self.values, **values})
        except ValueError as e:
            raise IngestError(f"the {phase} query: {e}", stage="usage") from None
        try:
            return self.sparql.query(text, row_cap=cap).rows
        except KBQAError as e:
            where = where or f"after {values.get('after', '')[:80]}"
            e.info.message = (f"{phase} page {where}: {e.info.message}; the {self.state['pages']:,} pages before it "
                              "are kept in the store's building folder: run the same command again to resume"
                              + (" (with a smaller --page-size or a larger --endpoint-timeout)"
                                 if getattr(e, "timed_out", False) else ""))
            raise

    def _pages(self, phase: str):  # noqa: ANN202 - Iterator[(rows, resume point)]
        if phase == "popularity":
            return self._popularity_pages()
        if phase == "ids":
            return self._id_pages()
        return ((rows, key) for rows, key, _ in self._keyset_pages(phase, str(self.state["after"])))

    def _keyset_pages(self, phase: str, after: str, values: dict[str, str] | None = None, where: str = "",
                      final: bool = False):  # noqa: ANN202 - Iterator[(rows, last key, last page?)]
        """Pages of complete keys: a full page loses its last key's rows (they may continue on the next
        page) and the next page starts after the last key kept; a key alone filling a page doubles it.
        With `final` the last page is yielded even when empty (its caller records that the query is done)."""
        limit = self.sparql.page_limit(self.page_size)
        while True:
            rows = self._query(phase, {**(values or {}), "after": escape_string(after), "limit": str(limit)}, limit,
                               where)
            if len(rows) < limit and self.sparql.page_limit(limit) < limit:
                limit = self.sparql.page_limit(limit)  # the server cut the page at its row cap: ask again, smaller
                continue
            keys = [r[0]["value"] if r and r[0] else "" for r in rows]
            if any(k <= after for k in keys) or keys != sorted(keys):
                raise IngestError(f"the endpoint did not return {phase} rows ordered by key after {after[:80]!r}; "
                                  "keyset paging needs ORDER BY STR(?key) and FILTER(STR(?key) > after)",
                                  stage="ingest")
            if len(rows) < limit:
                if rows or final:
                    yield rows, keys[-1] if rows else after, True
                return
            cut = keys.index(keys[-1])
            if cut == 0:
                if limit >= MAX_PAGE_ROWS:
                    raise IngestError(f"{phase}: the key {keys[0][:80]!r} has more than {MAX_PAGE_ROWS} rows",
                                      stage="ingest")
                limit *= 2
                continue
            yield rows[:cut], keys[cut - 1], False
            after, limit = keys[cut - 1], self.sparql.page_limit(self.page_size)

    def _id_pages(self):  # noqa: ANN202 - Iterator[(rows, IdsProgress JSON)]
        """The ids of each group of predicates (kb_dumps/endpoint_ids.py), resuming inside the group it stopped in."""
        assert self.memory is not None
        conn = self.memory.conn
        progress = IdsProgress.loads(str(self.state["after"]))
        total = predicate_count(conn)
        done = predicate_count(conn, progress.done) if progress.done else 0
        done_through = progress.done  # the last predicate of the last complete group
        for group in predicate_groups(conn, self.sparql.page_limit(self.page_size), progress):
            self.ids_status = f"predicates {done:,}/{total:,}"
            valid = [p for p in group.predicates if IRIREF.fullmatch(p)]  # one no query can hold gives no ids
            key = progress.key if group.first == progress.first else ""
            where = (f"of the predicate {group.first[:80]}" if len(group.predicates) == 1 else
                     f"of {len(group.predicates):,} predicates {group.first[:60]} … {group.last[:60]}")
            values = {"predicates": " ".join(iri(p) for p in valid)}
            if not valid:
                yield [], IdsProgress(done=group.last).dumps()
            elif not key and (cap := self._unsorted_cap(group)):
                rows = self._query("ids", {**values, "after": escape_string(""), "limit": str(cap)}, cap, where)
                if len(rows) < cap:  # complete; a full page: the uses were no bound (a changing KG), page it sorted
                    yield rows, IdsProgress(done=group.last).dumps()
                    key = None
            if valid and key is not None:
                for rows, after, last in self._keyset_pages("ids_sorted", key, values,
                                                            where + (f" after {key[:80]}" if key else ""), final=True):
                    at = IdsProgress(done=group.last) if last else \
                        IdsProgress(done=done_through, first=group.first, last=group.last, key=after)
                    yield rows, at.dumps()
            done += len(group.predicates)
            done_through = group.last
            self.ids_status = f"predicates {done:,}/{total:,}"

    def _unsorted_cap(self, group: PredicateGroup) -> int:
        """The LIMIT of a group's one unsorted page: a page when its ids fit one; for a predicate alone that is
        larger, all its ids at once where the engine caps no result (time and memory then grow with that
        predicate, not with the KG: sorted pages cost Oxigraph more); 0: keyset-paged (an engine with a cap
        such as Virtuoso's 10,000 rows sorts by index)."""
        limit = self.sparql.page_limit(self.page_size)
        if group.bound < limit:
            return limit
        whole = self.sparql.page_limit(MAX_PAGE_ROWS)
        return group.bound + 1 if len(group.predicates) == 1 and group.bound < whole else 0

    def _popularity_pages(self):  # noqa: ANN202 - Iterator[(rows, last rowid)]
        """Batches of the memory's own ids (by rowid) with their statement counts from the endpoint; a batch's
        counts (one row per id) must fit under the server's row cap, or the cut rows would read as 0."""
        assert self.memory is not None
        last = int(self.state["after"] or 0)
        size = self.id_batch
        while True:
            size = max(1, min(size, self.sparql.page_limit(size + 1) - 1))
            batch = self.memory.conn.execute("SELECT rowid, id FROM labels WHERE rowid > ? ORDER BY rowid LIMIT ?",
                                             (last, size)).fetchall()
            if not batch:
                return
            ids = [i for _, i in batch if IRIREF.fullmatch(i)]  # an id a query cannot hold keeps popularity 0
            rows = self._query("popularity", {"ids": " ".join(iri(i) for i in ids)}, len(ids) + 1) if ids else []
            if len(rows) >= self.sparql.page_limit(len(ids) + 1) and len(ids) > 1:
                size = len(ids) // 2  # the server's cap (learnt from this answer) may have cut it: ask again
                continue
            last = batch[-1][0]
            yield rows, str(last)

    # ---- writing ---------------------------------------------------------------------------
    def _write(self, phase: str, rows: list[list[dict | None]]) -> None:
        assert self.memory is not None
        write_page(phase, rows, self.memory, int(self.state["generation"]), self.profile, self.languages,
                   stage_predicates="ids" in self.phases)

    # ---- the end -----------------------------------------------------------------------------
    def finish(self) -> None:
        """Complete the memory, write the manifest and switch DIR's `current` to the new version."""
        memory = self.memory
        assert memory is not None
        gen = int(self.state["generation"])
        if self.profile.labels_from_local_names:
            memory.fill_missing_labels(self.profile.local_name_label, gen)
        memory.set_meta("profile", self.profile.name)
        staged = drop_staging(memory.conn)
        memory.commit()
        if staged:
            memory.conn.execute("VACUUM")  # the staging tables' pages: the memory file as the ids alone make it
        self.label_rows = len(memory)
        memory.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        memory.conn.execute("PRAGMA journal_mode=DELETE")  # one self-contained file, like a dump ingestion's
        self.close()
        version = _next_version(self.root)
        manifest = {
            "format": MANIFEST_FORMAT, "profile": self.settings["profile"], "languages": list(self.languages),
            "endpoint": {"url": self.settings["endpoint"], "dialect": self.settings["dialect"]},
            "sources": [], "triples": 0, "label_rows": self.label_rows, "generation": gen, "version": version,
            "endpoint_ingest": {"pages": self.state["pages"], "rows": self.state["rows"],
                                "phases": self.phases, "all_ids": self.settings["all_ids"]},
            "updated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        (self.building / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
        live = StoreLayout.of(self.root)
        _clean_stale(self.root, keep=live.current if (self.root / "current").exists() else None)
        final = publish_version(self.root, self.building, version)
        _clean_stale(self.root, keep=final)

    def report(self, complete: bool, resumed: bool) -> EndpointIngestReport:
        rows = getattr(self, "label_rows", None)
        if rows is None:
            rows = len(self.memory) if self.memory is not None else 0
        return EndpointIngestReport(store=str(self.root), endpoint=self.sparql.url, profile=self.profile.name,
                                    complete=complete, resumed=resumed, label_rows=rows, pages=self.pages,
                                    rows_read=self.rows, seconds=time.perf_counter() - self.t0,
                                    phases=self.phase_stats)

