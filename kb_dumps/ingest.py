"""`kbqa ingest`: stream dumps into a new version of a store and its label memory, then swap it in.

One pass over each source: quads go to pyoxigraph's bulk loader while a collector writes the
label memory (labels, aliases, descriptions, kinds, popularity) in bounded batches. The run
builds a fresh data directory (a cheap hard-link backup of the live one for `--append`) and
only a complete run replaces the `current` link; a failure or a kill leaves the store as it
was. A lock file keeps a second writer out.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import multiprocessing as mp
import os
import shutil
import sqlite3
import sys
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING

import pyoxigraph as ox

from kb_dumps.collector import LabelCollector
from kb_dumps.label_memory import LabelMemory
from kb_dumps.layout import StoreLayout
from kb_dumps.profiles import detect_profile, get_profile
from kb_dumps.readers import (
    FORMATS,
    LineSegmentReader,
    ReadStats,
    compressed_errors,
    culprit_in_file,
    detect_format,
    open_binary,
    read_source,
)
from kb_dumps.stage_errors import IngestError, StoreError

if TYPE_CHECKING:
    from tqdm import tqdm

MANIFEST_FORMAT = "kbqa-store/1"


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@contextmanager
def store_lock(root: Path, wait: bool = False) -> Iterator[None]:
    """An exclusive lock on the store directory: one writer at a time, across processes. Never in a file or in a
    folder that is not a store (`StoreLayout.check_target`)."""
    StoreLayout.of(root).check_target()
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(StoreLayout.of(root).lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
            raise StoreError(f"the store at {root} is being written by another process (pid {holder}); "
                             "wait for it to finish or pass --wait") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)  # closing releases the flock


@dataclass
class SourceReport:
    path: str
    name: str
    sha256: str
    format: str
    triples: int = 0
    lines: int = 0
    skipped: int = 0
    skipped_examples: list[tuple[int, str]] = field(default_factory=list)
    status: str = "loaded"  # loaded | unchanged (same content already in the store)
    seconds: float = 0.0


@dataclass
class IngestReport:
    store: str
    profile: str
    sources: list[SourceReport]
    triples_added: int = 0  # new in the store: the store's count after minus before
    triples_present: int = 0  # read, but already in the store (or repeated in the input): not added again
    label_rows: int = 0
    seconds: float = 0.0
    changed: bool = True

    def to_dict(self) -> dict:
        return asdict(self)


def _progress(enabled: bool | None, desc: str):  # noqa: ANN202 - tqdm or a no-op
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(desc=desc, unit=" triples", unit_scale=True, file=sys.stderr, mininterval=0.5)


def _counted(quads: Iterator[ox.Quad], collector: LabelCollector, report: SourceReport, bar: tqdm | None) -> Iterator[ox.Quad]:
    n = 0
    observe = collector.observe
    for q in quads:
        observe(q)
        n += 1
        if bar is not None and n % 10_000 == 0:
            bar.update(10_000)
        yield q
    if bar is not None:
        bar.update(n % 10_000)
    report.triples = n


def _scan_labels(path: str, fmt_name: str, labels_path: str, profile_name: str, languages: tuple[str, ...],
                 generation: int, conn: Connection) -> None:
    """Scanner process: read the dump once more (from the page cache) and write the label memory."""
    try:
        memory = LabelMemory(labels_path)
        collector = LabelCollector(get_profile(profile_name), memory, generation, languages)
        fmt = FORMATS[fmt_name][0]
        with open_binary(Path(path)) as f:
            rest = b""
            for block in iter(lambda: f.read(1 << 20), b""):
                data = rest + block
                cut = data.rfind(b"\n") + 1
                collector.scan_block(data[:cut], fmt)
                rest = data[cut:]
            if rest:
                collector.scan_block(rest + b"\n", fmt)
        collector.flush()
        memory.commit()
        memory.close()
        conn.send(("ok", collector.statements))
    except BaseException as e:  # noqa: BLE001 - reported to the parent, which stops the run
        conn.send(("error", f"{type(e).__name__}: {e}"))


def _bulk_load_lines(path: Path, fmt_name: str, ox_store: ox.Store, labels_path: Path, profile_name: str,
                     languages: tuple[str, ...], generation: int, report: SourceReport, stats: ReadStats,
                     bar: tqdm | None) -> None:
    """N-Triples / N-Quads: pyoxigraph parses and loads in Rust while a second process scans the
    same file for the label memory. Building a Python object per triple, or scanning in a thread
    (pyoxigraph holds the GIL while it loads), halves the load rate (bench/ingest.py).
    """
    fmt = FORMATS[fmt_name][0]
    ctx = mp.get_context("spawn")  # never fork a process that holds RocksDB handles
    parent, child = ctx.Pipe()
    scanner = ctx.Process(target=_scan_labels, daemon=True,
                          args=(str(path), fmt_name, str(labels_path), profile_name, languages, generation, child))
    scanner.start()
    child.close()
    try:
        with open_binary(path) as f:
            reader = LineSegmentReader(f, (lambda block: bar.update(block.count(b"\n"))) if bar else (lambda b: None))
            while not reader.done:
                reader.start_segment()
                try:
                    ox_store.bulk_load(input=reader, format=fmt)
                except SyntaxError as e:
                    line = reader.segment_start_line + max(int(e.lineno or 1), 1) - 1
                    line, reason = culprit_in_file(path, line, fmt, str(e.msg).split(": ", 1)[-1])
                    raise IngestError(f"malformed line: {reason}", file=str(path), line=line) from None
        try:
            status, detail = parent.recv()
        except EOFError:
            status, detail = "error", "the label scanner process died"
        if status != "ok":
            raise IngestError(f"writing the label memory failed: {detail}", file=str(path))
    finally:
        if scanner.is_alive():
            scanner.join(timeout=0 if sys.exc_info()[0] else None)
            if scanner.is_alive():
                scanner.kill()
                scanner.join()
        parent.close()
    stats.lines = reader.lines_total
    report.triples = int(detail)


def _next_version(root: Path) -> int:
    versions = [int(p.name.split("-")[1]) for p in root.glob("data-*") if p.name.split("-")[1].isdigit()]
    return max(versions, default=0) + 1


def _clean_stale(root: Path, keep: Path | None) -> None:
    """Remove leftovers of killed runs and versions no longer current (readers keep open files)."""
    for p in root.glob(".building-*"):
        shutil.rmtree(p, ignore_errors=True)
    for p in root.glob("data-*"):
        if keep is None or p.resolve() != keep.resolve():
            shutil.rmtree(p, ignore_errors=True)


def publish_version(root: Path, building: Path, version: int) -> Path:
    """Rename a complete data directory to `data-NNNNNN` and switch `current` to it atomically."""
    final = root / f"data-{version:06d}"
    building.rename(final)
    tmp_link = root / f".current-{os.getpid()}"
    if tmp_link.is_symlink():
        tmp_link.unlink()
    tmp_link.symlink_to(final.name)
    os.replace(tmp_link, root / "current")  # the atomic switch to the new version
    return final


def _copy_version(live: StoreLayout, target: Path) -> None:
    """A writable copy of the live version: hard-link backup of RocksDB, SQLite backup, index copy."""
    ox.Store.read_only(str(live.oxigraph)).backup(str(target / "oxigraph"))
    src = sqlite3.connect(f"file:{live.labels}?mode=ro", uri=True)
    dst = sqlite3.connect(target / "labels.sqlite")
    with dst:
        src.backup(dst)
    src.close()
    dst.close()
    # Derived data built from the memory (grounding indexes, case bank) carries over; the index is
    # updated incrementally from the rows whose generation is newer.
    for derived in ("index", "cases"):
        if (live.current / derived).is_dir():
            shutil.copytree(live.current / derived, target / derived)


def _checked_paths(sources: list[str | Path]) -> list[Path]:
    """The sources as paths, each an existing file (a folder or a missing file is an error naming it)."""
    paths = [Path(s) for s in sources]
    for p in paths:
        if p.is_dir():
            raise IngestError("is a directory; give the dump files in it (e.g. DIR/*.nt.gz)", file=str(p))
        if not p.is_file():
            raise IngestError("no such file", file=str(p))
    return paths


def _existing_manifest(live: StoreLayout, root: Path, replace: bool) -> dict | None:
    """The manifest of the store being added to (None: a new store, or --replace); a remote store or an incomplete
    one is refused."""
    existing = live.manifest() if live.exists() and not replace else None
    if existing is not None and existing.get("endpoint"):
        raise IngestError(f"{root} is a remote store (its triples are on {existing['endpoint']['url']}); "
                          "dump sources need a local store: use another --store, or --replace", stage="usage")
    if existing is None and not replace and (root / "current").exists():
        raise StoreError(f"{root} holds an incomplete store (no manifest); pass --replace to rebuild it")
    return existing


def _write_manifest(building: Path, fields: dict) -> None:
    manifest = {"format": MANIFEST_FORMAT, **fields, "updated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    (building / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")


def _source_reports(paths: list[Path], formats: dict[str, str], known: dict[str, dict]) -> list[SourceReport]:
    """One report per source (its format and content hash); a source the store already holds is `unchanged`."""
    reports = []
    for p in paths:
        fmt = formats.get(str(p)) or detect_format(p)
        r = SourceReport(path=str(p), name=p.name, sha256=file_sha256(p), format=fmt)
        if r.sha256 in known:
            r.status, r.triples = "unchanged", known[r.sha256].get("triples", 0)
        reports.append(r)
    return reports


def _load_sources(new: list[SourceReport], building: Path, prof_name: str, languages: tuple[str, ...],
                  appending: bool, skip_bad_lines: bool, progress: bool | None) -> tuple[int, int, int, int]:
    """Load the new sources into the version being built (its store and label memory): (triples before, triples
    after, label rows, the label memory's generation). `prof_name` is the profile as given (a name or a JSON file):
    the bulk loader's scanner process opens it again."""
    prof = get_profile(prof_name)
    memory = LabelMemory(building / "labels.sqlite")
    generation = memory.begin_generation()
    collector = LabelCollector(prof, memory, generation, languages)
    ox_store = ox.Store(str(building / "oxigraph"))
    # Counted, not summed from what was read: a triple already in the store is not "added" again. A
    # count is a scan (~3 M quads/s here), small next to loading the same triples.
    before = len(ox_store) if appending else 0
    for r in new:
        t0 = time.perf_counter()
        stats = ReadStats()
        bar = _progress(progress, r.name)
        try:
            with compressed_errors(Path(r.path)):  # a truncated .gz: one line, not an EOFError
                if FORMATS[r.format][1] and r.format != "wikidata-json" and not skip_bad_lines:
                    collector.flush()  # the scanner process writes the memory file next
                    memory.commit()
                    _bulk_load_lines(Path(r.path), r.format, ox_store, building / "labels.sqlite",
                                     prof_name, languages, generation, r, stats, bar)
                else:
                    quads = read_source(Path(r.path), r.format, stats, skip_bad_lines=skip_bad_lines,
                                        languages=languages)
                    ox_store.bulk_extend(_counted(quads, collector, r, bar))
        finally:
            if bar is not None:
                bar.close()
        r.lines, r.skipped, r.skipped_examples = stats.lines, stats.skipped_count, stats.skipped
        r.seconds = time.perf_counter() - t0
    collector.flush()
    if prof.labels_from_local_names:
        memory.fill_missing_labels(prof.local_name_label, generation)
    memory.set_meta("profile", prof.name)
    memory.commit()
    label_rows = len(memory)
    memory.close()
    ox_store.flush()
    after = len(ox_store)
    del ox_store
    return before, after, label_rows, generation


def ingest(sources: list[str | Path], store: str | Path, *, profile: str | None = None, append: bool = False,
           replace: bool = False, skip_bad_lines: bool = False, languages: tuple[str, ...] = ("en",),
           formats: dict[str, str] | None = None, progress: bool | None = None, wait: bool = False) -> IngestReport:
    """Load `sources` into the store at `store` (created if missing) and write its label memory.

    Re-running with sources already in the store (same content hash, any name) changes nothing;
    `append=True` adds new sources to an existing store; `replace=True` rebuilds from scratch.
    """
    t_start = time.perf_counter()
    root = Path(store)
    paths = _checked_paths(sources)
    if profile is not None:
        get_profile(profile)  # an unknown name or a bad file: refused before the store folder is made
    formats = formats or {}
    with store_lock(root, wait=wait):
        live = StoreLayout.of(root)
        existing = _existing_manifest(live, root, replace)
        known = {s["sha256"]: s for s in (existing or {}).get("sources", [])}
        reports = _source_reports(paths, formats, known)
        new = [r for r in reports if r.sha256 not in known]
        if existing is not None and not new:
            return IngestReport(store=str(root), profile=existing["profile"], sources=reports, changed=False,
                                label_rows=existing.get("label_rows", 0), seconds=time.perf_counter() - t_start)
        if existing is not None and not append:
            raise IngestError(f"{root} already holds other sources ({', '.join(s['name'] for s in existing['sources'])}); "
                              "pass --append to add to it or --replace to rebuild it", stage="usage")
        prof_name = existing["profile"] if existing else (profile or _detect(new[0] if new else None, languages))
        if existing and profile and profile != prof_name:
            raise IngestError(f"the store uses the {prof_name} profile; cannot append with --profile {profile}",
                              stage="usage")
        prof = get_profile(prof_name)
        version = _next_version(root)
        building = root / f".building-{version}-{os.getpid()}"
        _clean_stale(root, keep=live.current if (root / "current").exists() else None)
        building.mkdir(parents=True)
        try:
            if existing:
                _copy_version(live, building)
            before, after, label_rows, generation = _load_sources(new, building, prof_name, languages, bool(existing),
                                                                 skip_bad_lines, progress)
            all_sources = list((existing or {}).get("sources", [])) + [
                {k: v for k, v in asdict(r).items() if k != "skipped_examples"} for r in new]
            _write_manifest(building, {"profile": prof.name, "languages": list(languages), "sources": all_sources,
                                       "triples": after, "label_rows": label_rows, "generation": generation,
                                       "version": version})
            final = publish_version(root, building, version)
        except BaseException:
            shutil.rmtree(building, ignore_errors=True)
            raise
        _clean_stale(root, keep=final)
        return IngestReport(store=str(root), profile=prof.name, sources=reports,
                            triples_added=after - before,
                            triples_present=max(sum(r.triples for r in new) - (after - before), 0),
                            label_rows=label_rows,
                            seconds=time.perf_counter() - t_start)


def _detect(report: SourceReport | None, languages: tuple[str, ...]) -> str:
    """The profile from the IRIs of the first quads of the first source."""
    if report is None:
        return "generic"
    iris: list[str] = []
    stats = ReadStats()
    try:
        for i, q in enumerate(read_source(Path(report.path), report.format, stats, skip_bad_lines=True
                                          if report.format in ("nt", "nq", "freebase", "wikidata-json") else False,
                                          languages=languages)):
            iris.append(q.predicate.value)
            if i >= 500:
                break
    except (IngestError, EOFError, OSError, zlib.error):
        pass  # the real pass reports the error with its line (a truncated archive too)
    if report.format == "freebase":
        return "freebase"
    return detect_profile(iris)
