"""Streaming dump readers: RDF files (plain, .gz, .bz2) and Wikidata JSON entity dumps -> quads.

Every reader yields pyoxigraph `Quad`s without holding the file in memory. Line-based
formats (N-Triples, N-Quads, Freebase RDF, Wikidata JSON) are parsed in chunks of lines so
that an error names the absolute line and `skip_bad_lines` can drop one line and go on.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import json
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import pyoxigraph as ox

from kb_dumps.profiles import RDF, RDFS, SCHEMA, SKOS, WIKIDATA_PREFIXES, XSD
from kb_dumps.stage_errors import IngestError

# name -> (pyoxigraph format, line based)
FORMATS: dict[str, tuple[ox.RdfFormat | None, bool]] = {
    "nt": (ox.RdfFormat.N_TRIPLES, True),
    "nq": (ox.RdfFormat.N_QUADS, True),
    "ttl": (ox.RdfFormat.TURTLE, False),
    "rdfxml": (ox.RdfFormat.RDF_XML, False),
    "freebase": (ox.RdfFormat.N_TRIPLES, True),  # Freebase RDF dumps are tab-separated N-Triples
    "wikidata-json": (None, True),
}
_SUFFIXES = {
    ".nt": "nt", ".ntriples": "nt", ".nq": "nq", ".nquads": "nq", ".ttl": "ttl", ".turtle": "ttl",
    ".rdf": "rdfxml", ".owl": "rdfxml", ".xml": "rdfxml", ".json": "wikidata-json", ".jsonl": "wikidata-json",
}
CHUNK_LINES = 20_000


@dataclass
class ReadStats:
    lines: int = 0
    quads: int = 0
    skipped: list[tuple[int, str]] = field(default_factory=list)  # (line, reason), first 100 kept
    skipped_count: int = 0

    def skip(self, line: int, reason: str) -> None:
        self.skipped_count += 1
        if len(self.skipped) < 100:
            self.skipped.append((line, reason))


def split_compression(path: Path) -> tuple[str, str]:
    """('gz'|'bz2'|'', the name without the compression suffix)."""
    name = path.name
    for comp in ("gz", "bz2"):
        if name.lower().endswith("." + comp):
            return comp, name[: -len(comp) - 1]
    return "", name


def detect_format(path: Path) -> str:
    """Format name from the file name (`x.nt.gz` -> `nt`); Freebase dumps are detected by name."""
    _, base = split_compression(path)
    lower = base.lower()
    if "freebase" in lower and not lower.endswith((".ttl", ".rdf", ".xml")):
        return "freebase"
    for suffix, fmt in _SUFFIXES.items():
        if lower.endswith(suffix):
            return fmt
    raise IngestError(f"cannot tell the format of {path.name} from its name; pass --format "
                      f"({', '.join(FORMATS)})", file=str(path))


def open_binary(path: Path) -> IO[bytes]:
    comp, _ = split_compression(path)
    try:
        if comp == "gz":
            return gzip.open(path, "rb")
        if comp == "bz2":
            return bz2.open(path, "rb")
        return open(path, "rb")
    except OSError as e:
        raise IngestError(f"cannot open: {e.strerror or e}", file=str(path)) from None


@contextlib.contextmanager
def compressed_errors(path: Path) -> Iterator[None]:
    """A truncated or corrupt .gz / .bz2 as one ingest error naming the file (exit 3), whoever was reading it:
    gzip raises EOFError / BadGzipFile, bz2 EOFError / OSError, zlib its own error; pyoxigraph, reading the
    stream in Rust, may pass them on as OSError."""
    comp, _ = split_compression(path)
    try:
        yield
    except IngestError:
        raise
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:
        kind = {"gz": "gzip", "bz2": "bzip2"}.get(comp, "compressed")
        what = "is truncated" if isinstance(e, EOFError) else f"is not valid {kind} data"
        raise IngestError(f"the {kind} file {what} ({e}); download it again", file=str(path)) from None
    except OSError as e:
        if not comp or isinstance(e, FileNotFoundError | PermissionError | IsADirectoryError):
            raise
        kind = {"gz": "gzip", "bz2": "bzip2"}[comp]
        raise IngestError(f"the {kind} file is truncated or corrupt ({e}); download it again",
                          file=str(path)) from None


def _error_line(err: SyntaxError) -> int:
    return int(getattr(err, "lineno", 0) or 0)


def _error_reason(err: SyntaxError) -> str:
    msg = str(err.msg if hasattr(err, "msg") else err)
    return msg.split(": ", 1)[-1] if msg.startswith("Parser error") else msg


def culprit(lines: list[bytes], rel: int, fmt: ox.RdfFormat, reason: str) -> tuple[int, str]:
    """The line (1-based in `lines`) that a parse error at line `rel` belongs to, with that line's own message.
    pyoxigraph reports a triple left without its dot at the start of the *next* line, or as the end of the
    file; each N-Triples line parses alone, so when line `rel` does, the one before it is the bad one."""
    for k in (rel, rel - 1):
        if 1 <= k <= len(lines):
            try:
                for _ in ox.parse(lines[k - 1].rstrip(b"\r\n"), format=fmt):
                    pass
            except SyntaxError as e:
                why = _error_reason(e)
                if why.lower().startswith("unexpected end of file"):  # the line alone: it stops mid-triple
                    why = "the line ends inside a triple (an IRI or string left open, or no final ' .')"
                return k, why
    return min(max(rel, 1), max(len(lines), 1)), reason


def culprit_in_file(path: Path, line: int, fmt: ox.RdfFormat, reason: str) -> tuple[int, str]:
    """`culprit` for an error at `line` of a whole file (the bulk loader's errors): reads the two lines."""
    first = max(line - 1, 1)
    with open_binary(path) as f:
        near = [ln for i, ln in zip(range(1, line + 1), f, strict=False) if i >= first]
    found, why = culprit(near, line - first + 1, fmt, reason)
    return first + found - 1, why


def read_line_rdf(path: Path, fmt: ox.RdfFormat, stats: ReadStats, skip_bad_lines: bool) -> Iterator[ox.Quad]:
    """N-Triples / N-Quads in chunks of lines; errors name the absolute line."""
    with open_binary(path) as f:
        first_line = 1
        while True:
            lines = list(_take(f, CHUNK_LINES))
            if not lines:
                return
            stats.lines += len(lines)
            start = 0
            while start < len(lines):
                chunk = b"".join(lines[start:])
                quads: list[ox.Quad] = []
                try:
                    for q in ox.parse(chunk, format=fmt):
                        quads.append(q)
                except SyntaxError as e:
                    # 1-based within this chunk, moved back to the line that is really bad (see culprit)
                    rel, reason = culprit(lines[start:], max(_error_line(e), 1), fmt, _error_reason(e))
                    bad = first_line + start + rel - 1
                    if not skip_bad_lines:
                        raise IngestError(f"malformed line: {reason}", file=str(path), line=bad) from None
                    # Keep what parsed before the bad line, drop the bad line, re-parse the rest.
                    good = b"".join(lines[start:start + rel - 1])
                    if good:
                        yield from ox.parse(good, format=fmt)
                    stats.skip(bad, reason)
                    start += rel
                    continue
                except (UnicodeDecodeError, ValueError) as e:
                    raise IngestError(f"cannot decode: {e}", file=str(path), line=first_line + start) from None
                yield from quads
                break
            first_line += len(lines)


def _take(f: IO[bytes], n: int) -> Iterator[bytes]:
    for _ in range(n):
        line = f.readline()
        if not line:
            return
        if not line.endswith(b"\n"):
            line += b"\n"
        yield line


def read_whole_rdf(path: Path, fmt: ox.RdfFormat, stats: ReadStats) -> Iterator[ox.Quad]:
    """Turtle and RDF/XML stream from the file; an error stops the run (they are not line based)."""
    base = path.resolve().as_uri()
    with open_binary(path) as f:
        try:
            yield from ox.parse(f, format=fmt, base_iri=base)
        except SyntaxError as e:
            line = _error_line(e) or (locate_xml_error(path) if fmt == ox.RdfFormat.RDF_XML else None)
            raise IngestError(f"malformed input: {_error_reason(e)}", file=str(path), line=line) from None
        except (UnicodeDecodeError, ValueError, OSError) as e:
            raise IngestError(f"cannot read: {e}", file=str(path)) from None


def locate_xml_error(path: Path) -> int | None:
    """The line of the first XML well-formedness error (pyoxigraph's RDF/XML errors carry no position).

    expat from the standard library, streamed; it resolves no external entities.
    """
    import xml.parsers.expat

    parser = xml.parsers.expat.ParserCreate()
    try:
        with open_binary(path) as f:
            for block in iter(lambda: f.read(1 << 16), b""):
                parser.Parse(block, False)
            parser.Parse(b"", True)
    except xml.parsers.expat.ExpatError as e:
        return e.lineno
    return None


# ---- Wikidata JSON entity dumps ------------------------------------------------------------
WD, WDT = WIKIDATA_PREFIXES["wd"], WIKIDATA_PREFIXES["wdt"]
_LABEL, _DESC, _ALIAS = ox.NamedNode(RDFS + "label"), ox.NamedNode(SCHEMA + "description"), ox.NamedNode(SKOS + "altLabel")
_TYPE = ox.NamedNode(RDF + "type")
_PROPERTY_CLASS = ox.NamedNode(WIKIDATA_PREFIXES["wikibase"] + "Property")
_GEO_WKT = ox.NamedNode("http://www.opengis.net/ont/geosparql#wktLiteral")


def wikidata_value(snak: dict) -> ox.NamedNode | ox.Literal | None:
    """The RDF term of a Wikidata main snak (truthy statement value); None for somevalue/novalue."""
    if snak.get("snaktype") != "value":
        return None
    dv = snak.get("datavalue") or {}
    value, vtype = dv.get("value"), dv.get("type")
    if vtype == "wikibase-entityid":
        eid = value.get("id") or {"item": "Q", "property": "P", "lexeme": "L"}.get(value.get("entity-type"), "Q") + str(
            value.get("numeric-id"))
        return ox.NamedNode(WD + eid)
    if vtype == "string":
        return ox.Literal(value)
    if vtype == "monolingualtext":
        return ox.Literal(value["text"], language=value["language"])
    if vtype == "time":
        t = value["time"].lstrip("+")
        # Wikidata writes unknown month/day as 00; the RDF export uses 01 for them.
        date, _, rest = t.partition("T")
        parts = date.split("-") if not date.startswith("-") else ["-" + date[1:].split("-")[0], *date[1:].split("-")[1:]]
        if len(parts) == 3:
            y, m, d = parts
            date = f"{y}-{m if m != '00' else '01'}-{d if d != '00' else '01'}"
        return ox.Literal(f"{date}T{rest or '00:00:00Z'}", datatype=ox.NamedNode(XSD + "dateTime"))
    if vtype == "quantity":
        return ox.Literal(value["amount"].lstrip("+"), datatype=ox.NamedNode(XSD + "decimal"))
    if vtype == "globecoordinate":
        return ox.Literal(f"Point({value['longitude']} {value['latitude']})", datatype=_GEO_WKT)
    return None


def wikidata_entity_quads(entity: dict, languages: tuple[str, ...]) -> Iterator[ox.Quad]:
    """Truthy `wdt:` statements (best rank per property, deprecated never) plus labels in `languages`."""
    subject = ox.NamedNode(WD + entity["id"])
    if entity.get("type") == "property":
        yield ox.Quad(subject, _TYPE, _PROPERTY_CLASS)
    for lang in languages:
        if lang in entity.get("labels", {}):
            yield ox.Quad(subject, _LABEL, ox.Literal(entity["labels"][lang]["value"], language=lang))
        if lang in entity.get("descriptions", {}):
            yield ox.Quad(subject, _DESC, ox.Literal(entity["descriptions"][lang]["value"], language=lang))
        for alias in entity.get("aliases", {}).get(lang, []):
            yield ox.Quad(subject, _ALIAS, ox.Literal(alias["value"], language=lang))
    for pid, statements in entity.get("claims", {}).items():
        preferred = [s for s in statements if s.get("rank") == "preferred"]
        best = preferred or [s for s in statements if s.get("rank", "normal") == "normal"]
        predicate = ox.NamedNode(WDT + pid)
        for st in best:
            obj = wikidata_value(st.get("mainsnak", {}))
            if obj is not None:
                yield ox.Quad(subject, predicate, obj)


def read_wikidata_json(path: Path, stats: ReadStats, skip_bad_lines: bool,
                       languages: tuple[str, ...]) -> Iterator[ox.Quad]:
    """One entity per line, as in `latest-all.json.gz` (a JSON array with one entity per line)."""
    with open_binary(path) as f:
        for lineno, raw in enumerate(f, start=1):
            stats.lines += 1
            line = raw.strip().rstrip(b",")
            if line in (b"", b"[", b"]"):
                continue
            try:
                entity = json.loads(line)
                if not isinstance(entity, dict) or "id" not in entity:
                    raise ValueError("not a Wikidata entity object (no \"id\")")
                quads = list(wikidata_entity_quads(entity, languages))
            except (ValueError, KeyError, TypeError, AttributeError) as e:
                reason = f"bad entity JSON: {e}"
                if not skip_bad_lines:
                    raise IngestError(reason, file=str(path), line=lineno) from None
                stats.skip(lineno, reason)
                continue
            yield from quads


def read_source(path: Path, fmt: str, stats: ReadStats, *, skip_bad_lines: bool = False,
                languages: tuple[str, ...] = ("en",)) -> Iterator[ox.Quad]:
    """Quads of one source file, streamed."""
    if fmt not in FORMATS:
        raise IngestError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}", file=str(path))
    oxfmt, line_based = FORMATS[fmt]
    if skip_bad_lines and not line_based:
        raise IngestError(f"--skip-bad-lines works only for line-based formats (nt, nq, freebase, wikidata-json), "
                          f"not {fmt}: fix the file or convert it to N-Triples", file=str(path))
    if fmt == "wikidata-json":
        return read_wikidata_json(path, stats, skip_bad_lines, languages)
    assert oxfmt is not None
    if line_based:
        return read_line_rdf(path, oxfmt, stats, skip_bad_lines)
    return read_whole_rdf(path, oxfmt, stats)



class LineSegmentReader:
    """A file-like view over a line-based dump that ends each segment after ~`segment_lines` lines.

    pyoxigraph's bulk loader reads it (parsing in Rust); each block of complete lines is also
    handed to `on_block` (the label collector's byte scanner) as it passes. Loading in segments
    keeps the bulk loader's memory bounded whatever the file size.
    """

    def __init__(self, f: IO[bytes], on_block: Callable[[bytes], object], segment_lines: int = 500_000,
                 block_size: int = 1 << 20):
        self.f, self.on_block = f, on_block
        self.segment_lines, self.block_size = segment_lines, block_size
        self.rest = b""
        self.buf = memoryview(b"")
        self.lines_total = 0  # lines handed out so far
        self.segment_start_line = 1
        self._segment_count = 0
        self.eof = False

    def start_segment(self) -> None:
        """Called before each bulk load; a segment ends only with an empty buffer."""
        self.segment_start_line = self.lines_total + 1
        self._segment_count = 0

    def _refill(self) -> bool:
        if self.eof:
            return False
        block = self.f.read(self.block_size)
        if not block:
            self.eof = True
            data, self.rest = self.rest, b""
            if data and not data.endswith(b"\n"):
                data += b"\n"
        else:
            data = self.rest + block
            cut = data.rfind(b"\n") + 1
            data, self.rest = data[:cut], data[cut:]
        if not data:
            return not self.eof
        n = data.count(b"\n")
        self.lines_total += n
        self._segment_count += n
        self.on_block(data)
        self.buf = memoryview(data)
        return True

    def read(self, n: int = -1) -> bytes:
        while not self.buf:
            if self._segment_count >= self.segment_lines or not self._refill():
                return b""  # end of this segment (or of the file)
        if n is None or n < 0 or n >= len(self.buf):
            out, self.buf = bytes(self.buf), memoryview(b"")
        else:
            out, self.buf = bytes(self.buf[:n]), self.buf[n:]
        return out

    @property
    def done(self) -> bool:
        return self.eof and not self.buf
