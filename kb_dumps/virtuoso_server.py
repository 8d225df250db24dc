"""Run Debian's `virtuoso-opensource` (OpenLink Virtuoso 7, the engine behind DBpedia's endpoint) on loopback.

Used by the tests and `bench/endpoint_large.py` to check the pipeline against the engine large public KGs run
on. `VirtuosoServer(sources)` writes a `virtuoso.ini` into a folder of its own (its own database files, free
ports on 127.0.0.1 for SQL and HTTP, a `load/` folder as the only one besides `.` in DirsAllowed), starts
`virtuoso-t` in the foreground, bulk-loads the RDF files (N-Triples or Turtle, gzipped or not: the bulk loader
reads `.gz` itself) into one graph with `ld_dir` / `rdf_loader_run` through `isql`, and makes that graph the
default graph of `/sparql` (a `DB.DBA.SYS_SPARQL_HOST` row for every host: `[SPARQL] DefaultGraph` in the ini
only fills the query form), so that `http://127.0.0.1:PORT/sparql` answers queries without FROM on the loaded
data only (without it Virtuoso's default graph is the union of all graphs, its own `virtrdf:` metadata too). `stop()` shuts it down
(`shutdown` through isql, then SIGTERM, then SIGKILL). Install: `make virtuoso` (apt-get, as root).

The engine's defaults that a client must know about are in the `virtuoso` dialect
(kb_dumps/endpoint_settings.py): the server row cap `ResultSetMaxRows` (here `max_rows`, 10,000 on a
Debian install) and the partial results of a query stopped by `MaxQueryExecutionTime` (here `timeout_s`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable
from pathlib import Path

from kb_dumps.oxigraph_server import free_port
from kb_dumps.stage_errors import StoreError

DEFAULT_GRAPH = "urn:kbqa:default"
RDF_SUFFIXES = (".nt", ".ttl", ".nt.gz", ".ttl.gz")
# 8 KB pages: 20,000 buffers are 160 MB of cache, enough for a few million triples on a shared machine.
DEFAULT_BUFFERS = 20_000

INI = """\
[Database]
DatabaseFile = {db}/virtuoso.db
ErrorLogFile = {db}/virtuoso.log
LockFile = {db}/virtuoso.lck
TransactionFile = {db}/virtuoso.trx
xa_persistent_file = {db}/virtuoso.pxa
ErrorLogLevel = 7
FileExtend = 200
MaxCheckpointRemap = 2000
Striping = 0
TempStorage = TempDatabase

[TempDatabase]
DatabaseFile = {db}/virtuoso-temp.db
TransactionFile = {db}/virtuoso-temp.trx
MaxCheckpointRemap = 2000
Striping = 0

[Parameters]
ServerPort = 127.0.0.1:{sql_port}
LiteMode = 0
DisableUnixSocket = 1
DisableTcpSocket = 0
MaxClientConnections = 10
CheckpointInterval = 0
O_DIRECT = 0
CaseMode = 2
MaxStaticCursorRows = 5000
AllowOSCalls = 0
SchedulerInterval = 10
DirsAllowed = ., {load}
ThreadCleanupInterval = 0
ThreadThreshold = 10
ResourcesCleanupInterval = 0
SingleCPU = 0
MaxMemPoolSize = 200000000
MaxQueryMem = 1G
ThreadsPerQuery = {threads}
AsyncQueueMaxThreads = 10
NumberOfBuffers = {buffers}
MaxDirtyBuffers = {dirty}
MaxSortedTopRows = {sorted_top}

[HTTPServer]
ServerPort = 127.0.0.1:{http_port}
ServerRoot = {db}
MaxClientConnections = 10
DavRoot = DAV
EnabledDavVSP = 0
HTTPProxyEnabled = 0
ServerThreads = 10
MaxKeepAlives = 10
KeepAliveTimeout = 10
HTTPThreadSize = 280000
Charset = UTF-8
EnabledGzipContent = 0

[SPARQL]
ResultSetMaxRows = {max_rows}
MaxQueryCostEstimationTime = 0
MaxQueryExecutionTime = {timeout_s}
"""


def virtuoso_binaries() -> tuple[str, str]:
    """(`virtuoso-t`, `isql-vt`) from PATH; StoreError naming the install command when missing."""
    server = shutil.which("virtuoso-t")
    isql = shutil.which("isql-vt") or shutil.which("isql-v")
    if not server or not isql:
        raise StoreError("Virtuoso is not installed: `make virtuoso` (apt-get install virtuoso-opensource, as root)")
    return server, isql


class VirtuosoServer:
    """A private Virtuoso instance on 127.0.0.1 loaded with `sources`; a context manager (start / stop)."""

    def __init__(self, sources: Iterable[str | Path], *, folder: str | Path | None = None,
                 max_rows: int = 10_000, timeout_s: int = 60, buffers: int = DEFAULT_BUFFERS,
                 threads: int = 2, graph: str = DEFAULT_GRAPH):
        self.sources = [Path(s) for s in sources]
        for s in self.sources:
            if not s.is_file() or not s.name.endswith(RDF_SUFFIXES):
                raise StoreError(f"not an N-Triples or Turtle file (.nt/.ttl, gzipped or not): {s}")
        self._own = folder is None
        self.folder = Path(folder) if folder else Path(tempfile.mkdtemp(prefix="kbqa-virtuoso-"))
        self.max_rows, self.timeout_s, self.buffers, self.threads = max_rows, timeout_s, buffers, threads
        self.graph = graph
        self.sql_port = free_port()
        self.http_port = free_port()
        while self.http_port == self.sql_port:
            self.http_port = free_port()
        self.url = f"http://127.0.0.1:{self.http_port}/sparql"
        self.proc: subprocess.Popen | None = None
        self.load_seconds = 0.0
        self.triples = 0

    # ---- lifecycle -----------------------------------------------------------------------------
    def write_config(self) -> Path:
        db = self.folder / "db"
        load = self.folder / "load"
        db.mkdir(parents=True, exist_ok=True)
        load.mkdir(exist_ok=True)
        ini = self.folder / "virtuoso.ini"
        ini.write_text(INI.format(db=db, load=load, sql_port=self.sql_port, http_port=self.http_port,
                                  buffers=self.buffers, dirty=self.buffers * 3 // 4, threads=self.threads,
                                  max_rows=self.max_rows, sorted_top=max(10_000, self.max_rows),
                                  timeout_s=self.timeout_s), encoding="utf-8")
        return ini

    def start(self, wait_s: float = 120.0) -> VirtuosoServer:
        """Start the server, load the sources (when any) and wait until /sparql answers."""
        server, _ = virtuoso_binaries()
        ini = self.write_config()
        self._log = open(self.folder / "stderr.log", "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen([server, "+foreground", "+configfile", str(ini)], cwd=self.folder / "db",
                                     stdout=self._log, stderr=subprocess.STDOUT)
        try:
            self._wait_http(time.monotonic() + wait_s)
            graph = self.graph.replace("'", "")
            self.isql(f"DELETE FROM DB.DBA.SYS_SPARQL_HOST WHERE SH_HOST = '*';\n"
                      f"INSERT INTO DB.DBA.SYS_SPARQL_HOST (SH_HOST, SH_GRAPH_URI) VALUES ('*', '{graph}');\n")
            if self.sources:
                self.load(self.sources)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_http(self, deadline: float) -> None:
        probe = self.url + "?" + urllib.parse.urlencode({"query": "ASK {}"})
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                raise StoreError(f"virtuoso-t exited with code {self.proc.returncode if self.proc else '?'}: "
                                 f"{self.log_tail()}")
            try:
                with urllib.request.urlopen(probe, timeout=2) as r:  # noqa: S310 - loopback
                    if r.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.3)
        raise StoreError(f"Virtuoso on port {self.http_port} did not answer within the wait: {self.log_tail()}")

    def load(self, sources: Iterable[Path]) -> None:
        """Bulk-load RDF files into the default graph: links into `load/` (the allowed folder), then ld_dir and
        rdf_loader_run; a file the loader failed on is an error (DB.DBA.LOAD_LIST records it)."""
        load = self.folder / "load"
        t0 = time.perf_counter()
        for i, src in enumerate(sources):
            # a numbered name: two sources may share a file name; the suffix tells the loader the format
            name = f"{i:05d}-{src.name}"
            target = load / name
            if not target.exists():
                try:
                    os.link(src.resolve(), target)
                except OSError:  # another file system
                    shutil.copyfile(src, target)
        graph = self.graph.replace("'", "")
        self.isql(f"ld_dir('{load}', '*.*', '{graph}');\nrdf_loader_run();\ncheckpoint;\n", timeout_s=3600)
        errors = self.isql("SELECT ll_file, ll_error FROM DB.DBA.LOAD_LIST WHERE ll_error IS NOT NULL;")
        if ".nt" in errors or ".ttl" in errors:
            raise StoreError(f"Virtuoso's bulk loader refused a file: {' '.join(errors.split())[:400]}")
        count = self.isql(f"SPARQL SELECT COUNT(*) FROM <{graph}> WHERE {{ ?s ?p ?o }};")
        numbers = [int(w) for w in count.split() if w.isdigit()]
        self.triples = numbers[-1] if numbers else 0
        self.load_seconds = time.perf_counter() - t0

    def isql(self, script: str, timeout_s: float = 600) -> str:
        """Run SQL statements through `isql-vt` as dba (loopback, a fresh database's default password)."""
        _, isql = virtuoso_binaries()
        out = subprocess.run([isql, f"127.0.0.1:{self.sql_port}", "dba", "dba", "VERBOSE=OFF", "BANNER=OFF",
                              "PROMPT=OFF", "ECHO=OFF"], input=script, capture_output=True, text=True,
                             timeout=timeout_s)
        if out.returncode != 0 or "*** Error" in out.stdout or "*** Error" in out.stderr:
            raise StoreError(f"isql failed: {' '.join((out.stdout + out.stderr).split())[:400]}")
        return out.stdout

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.isql("shutdown;", timeout_s=60)
            except (StoreError, subprocess.TimeoutExpired, OSError):
                pass
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.terminate()
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(10)
        self.proc = None
        if getattr(self, "_log", None) is not None:
            self._log.close()
            self._log = None
        if self._own:
            shutil.rmtree(self.folder, ignore_errors=True)

    def log_tail(self, chars: int = 400) -> str:
        path = self.folder / "db" / "virtuoso.log"
        text = path.read_text(errors="replace") if path.is_file() else ""
        return " ".join(text[-chars:].split())

    def __enter__(self) -> VirtuosoServer:
        return self.start() if self.proc is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()
