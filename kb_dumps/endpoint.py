"""`EndpointStore`: the store interface over a remote SPARQL 1.1 endpoint, through SPARQLWrapper.

Same contract as `LocalStore` (`query(sparql, timeout_s=, row_cap=) -> QueryResult`, `ask`, `close`, a
context manager; `QueryError` with stage `execute`). What a remote store adds, each for a reason:
- every SELECT / CONSTRUCT / DESCRIBE carries an outer LIMIT of row cap + 1 (the extra row shows the
  cap cut the result): a remote engine would otherwise stream millions of rows;
- one deadline for the whole request (waiting for the rate limit, connecting, every read), not only
  a per-socket-operation timeout;
- retries with exponential backoff on connection errors, HTTP 429 and 5xx, honouring Retry-After; never
  on another 4xx (the same query would be refused again) nor on a timeout (it would time out again);
- a circuit breaker: once a request has spent its retries without reaching the endpoint, queries fail
  at once for `cooldown_s`, so an evaluation over a dead endpoint moves on to the next question;
- a client-side rate limit (token bucket) shared by all threads using the store;
- `SERVICE` is refused, except `SERVICE wikibase:label` on a Wikidata Query Service endpoint.
Settings come from the arguments, else the environment (`KBQA_ENDPOINT_*`, see kb_dumps/README.md).
"""

from __future__ import annotations

import email.utils
import http.client
import json
import re
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field

from kb_dumps.endpoint_rewrites import rewrite
from kb_dumps.endpoint_settings import (
    PARTIAL_RESULT_HEADERS,
    SERVER_ROW_CAP_HEADER,
    TIMEOUT_ERROR_MARKERS,
    Dialect,
    EndpointSettings,
    RateLimiter,
    detect_dialect,
    dialect_of_server,
    kbqa_version,
)
from kb_dumps.json_types import JsonObject
from kb_dumps.sparql_check import check_query
from kb_dumps.sparql_text import shape, with_row_cap
from kb_dumps.stage_errors import EndpointError, QueryError, StoreError
from kb_dumps.store_types import DEFAULT_ROW_CAP, DEFAULT_TIMEOUT_S, QueryResult, Term, term_to_dict

# A GET request whose URL is longer than this goes as a POST instead (proxies cut long URLs).
MAX_GET_URL = 2000
_RETRY_STATUS = {429, 500, 502, 503, 504}
_XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
_RDF_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"


class _Retry(Exception):
    """An attempt failed in a way worth retrying (connection error, 429, 5xx)."""

    def __init__(self, message: str, reason: str, status: int | None = None, retry_after: float | None = None):
        super().__init__(message)
        self.message, self.reason, self.status, self.retry_after = message, reason, status, retry_after


@dataclass
class EndpointStats:
    requests: int = 0
    retries: int = 0
    failures: int = 0
    seconds: float = 0.0
    by_reason: dict[str, int] = field(default_factory=dict)


class EndpointStore:
    """A remote SPARQL endpoint behind the store interface. Thread-safe; `close` is a no-op kept for the interface."""

    def __init__(self, url: str, *, timeout_s: float = DEFAULT_TIMEOUT_S, row_cap: int = DEFAULT_ROW_CAP,
                 dialect: str | None = None, headers: dict[str, str] | None = None, user_agent: str | None = None,
                 user: str | None = None, password: str | None = None, retries: int | None = None,
                 backoff_s: float | None = None, rate: float | None = None, burst: int | None = None,
                 method: str | None = None, cooldown_s: float | None = None,
                 settings: EndpointSettings | None = None):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise StoreError(f"not an http(s) endpoint URL: {url!r}", stage="usage")
        cfg = settings or EndpointSettings()
        self.url = url
        self.dialect = detect_dialect(url, dialect)
        # a `generic` endpoint becomes its engine's dialect from the first answer's Server header
        self._auto_dialect = dialect is None and self.dialect.name == "generic"
        # the server's own row cap, once an answer was cut by it (Virtuoso's ResultSetMaxRows)
        self.server_row_cap: int | None = None
        self.timeout_s, self.row_cap = timeout_s, row_cap
        self.headers = {**cfg.headers, **(headers or {})}
        self.user_agent = user_agent or cfg.user_agent or f"kbqa/{kbqa_version()} (SPARQLWrapper; knowledge-graph QA)"
        self.user = user if user is not None else cfg.user
        secret = cfg.password.get_secret_value() if cfg.password is not None else None
        self._password = password if password is not None else secret
        self.retries = cfg.retries if retries is None else retries
        self.backoff_s = cfg.backoff_s if backoff_s is None else backoff_s
        self.cooldown_s = cfg.cooldown_s if cooldown_s is None else cooldown_s
        self.method = (method or cfg.method).lower()
        the_rate = rate if rate is not None else (cfg.rate or self.dialect.default_rate)
        self.limiter = RateLimiter(the_rate, burst if burst is not None else cfg.burst)
        self.stats = EndpointStats()
        self._lock = threading.Lock()
        self._down_until = 0.0
        self._down_message = ""

    # ---- interface -------------------------------------------------------------------------
    def close(self) -> None:
        """Nothing to release: each request opens its own connection."""

    def __enter__(self) -> EndpointStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def ask(self, query: str, timeout_s: float | None = None, row_cap: int | None = None) -> bool:
        res = self.query(query, timeout_s, row_cap)
        return bool(res.boolean) if res.kind == "ask" else bool(res.rows)

    def query(self, query: str, timeout_s: float | None = None, row_cap: int | None = None) -> QueryResult:
        """Run a read-only query on the endpoint. Raises QueryError (refused, bad query, timeout) or
        EndpointError (unreachable, HTTP error, malformed answer), both with stage `execute`."""
        # what is sent is the check's own re-writing of the query: an engine that lexes comments or escapes
        # differently reads the same tokens as the check did
        query = check_query(query, allow_label_service=self.dialect.label_service).sent
        query = rewrite(query, self.dialect.rewrites)  # where the engine departs from the standard
        timeout = self.timeout_s if timeout_s is None else timeout_s
        cap = self.row_cap if row_cap is None else row_cap
        form = shape(query).form
        if form is None:
            raise QueryError("the query does not parse: no SELECT, ASK, CONSTRUCT or DESCRIBE form found")
        sorted_cap = self.dialect.max_sorted_rows
        if sorted_cap and cap >= sorted_cap and "ORDER" in query.upper():
            # Virtuoso refuses a sorted LIMIT above MaxSortedTopRows ("SR353"): the outer LIMIT cap+1 must fit
            cap = sorted_cap - 1
        sent, capped = with_row_cap(query, cap)
        t0 = time.monotonic()
        deadline = t0 + timeout
        attempt = 0
        while True:
            self._check_breaker()
            try:
                status, ctype, body, server_cap = self._attempt(sent, form, deadline, timeout)
                break
            except _Retry as e:
                self._count(e.reason)
                delay = e.retry_after if e.retry_after is not None else self.backoff_s * (2 ** attempt)
                if attempt >= self.retries or time.monotonic() + delay >= deadline:
                    self._give_up(e, attempt + 1)
                attempt += 1
                self.stats.retries += 1
                time.sleep(delay)
        result = self._convert(form, ctype, body, cap if capped else None)
        if server_cap is not None and form != "ask":
            result.truncated = True  # the server cut it: never a complete answer, whatever the row count
        with self._lock:
            self._down_until = 0.0
            self.stats.seconds += time.monotonic() - t0
        result.elapsed_s = time.monotonic() - t0
        return result

    # ---- one HTTP request --------------------------------------------------------------------
    def _request(self, query: str, form: str, remaining: float) -> urllib.request.Request:
        from SPARQLWrapper import BASIC, GET, JSON, N3, POST, URLENCODED, SPARQLWrapper

        w = SPARQLWrapper(self.url, agent=self.user_agent)
        w.setOnlyConneg(True)  # no format=/output= parameters: some engines refuse unknown ones
        w.setQuery(query)
        w.setReturnFormat(JSON if form in ("select", "ask") else N3)
        if self.dialect.timeout_param:
            w.addParameter(self.dialect.timeout_param, _timeout_value(self.dialect, remaining))
        for name, value in self.headers.items():
            w.addCustomHttpHeader(name, value)
        if form in ("construct", "describe"):
            w.addCustomHttpHeader("Accept", "application/n-triples, text/turtle;q=0.9")
        if self.user and self._password:
            w.setHTTPAuth(BASIC)
            w.setCredentials(self.user, self._password)
        get_url = len(self.url) + len(urllib.parse.quote(query)) + 8
        use_post = self.method == "post" or (self.method == "auto" and get_url > MAX_GET_URL)
        w.setMethod(POST if use_post else GET)
        w.setRequestMethod(URLENCODED)
        # SPARQLWrapper builds the request (encoding, Accept, auth, headers); the request is sent here
        # so that the status, Retry-After and the server's error text survive for retries and messages.
        return w._createRequest()

    def _attempt(self, query: str, form: str, deadline: float, budget: float) -> tuple[int, str, bytes, int | None]:
        """(status, content type, body, the server's row cap when it cut the answer)."""
        self.limiter.wait(deadline)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise self._timeout(budget)
        request = self._request(query, form, remaining)
        with self._lock:
            self.stats.requests += 1
        try:
            with urllib.request.urlopen(request, timeout=remaining) as resp:  # noqa: S310 - http(s) checked above
                chunks = []
                while True:
                    if time.monotonic() > deadline:
                        raise self._timeout(budget)
                    chunk = resp.read1(1 << 16)
                    if not chunk:
                        break
                    chunks.append(chunk)
                server_cap = self._read_headers(resp.headers, budget)
                return resp.status, resp.headers.get("Content-Type", ""), b"".join(chunks), server_cap
        except urllib.error.HTTPError as e:
            text = _error_text(e)
            self._identify(e.headers)
            if any(m in text for m in TIMEOUT_ERROR_MARKERS):  # the engine's own time limit stopped it
                raise self._timeout(budget, f" (the engine stopped it: {text[:120]})") from None
            if self.dialect.query_error and re.search(self.dialect.query_error, text):
                raise QueryError(f"the endpoint refused the query (HTTP {e.code}): {text}") from None
            if e.code in _RETRY_STATUS:
                raise _Retry(f"HTTP {e.code} {e.reason}{': ' + text if text else ''}", "http", e.code,
                             _retry_after(e.headers.get("Retry-After"))) from None
            if e.code in (401, 403):
                raise EndpointError(f"the endpoint {self.url} refused access (HTTP {e.code}); set "
                                    "KBQA_ENDPOINT_USER / KBQA_ENDPOINT_PASSWORD or KBQA_ENDPOINT_HEADERS",
                                    reason="auth", status=e.code) from None
            if e.code == 404:
                raise EndpointError(f"no SPARQL endpoint at {self.url} (HTTP 404)", reason="http",
                                    status=404) from None
            raise QueryError(f"the endpoint refused the query (HTTP {e.code} {e.reason})"
                             f"{': ' + text if text else ''}") from None
        except TimeoutError:  # socket.timeout is TimeoutError
            raise self._timeout(budget) from None
        except urllib.error.URLError as e:
            if isinstance(e.reason, TimeoutError):
                raise self._timeout(budget) from None
            raise _Retry(f"not reachable ({_reason(e.reason)})", "unreachable") from None
        except (http.client.HTTPException, ConnectionError, OSError) as e:
            raise _Retry(f"the connection failed ({type(e).__name__}: {e})", "unreachable") from None

    def _read_headers(self, headers: http.client.HTTPMessage, budget: float) -> int | None:
        """The engine (from `Server:`), a partial answer (raised as a timeout) and the server's row cap."""
        self._identify(headers)
        for name, states in PARTIAL_RESULT_HEADERS.items():
            value = headers.get(name)
            if value and any(value.startswith(s) for s in states):
                self._count("partial")
                raise self._timeout(budget, f" and sent partial results ({name}: {value}); they are not an answer")
        cap = headers.get(SERVER_ROW_CAP_HEADER, "").strip()
        if cap.isdigit():
            with self._lock:
                self.server_row_cap = int(cap)
            return int(cap)
        return None

    def _identify(self, headers: http.client.HTTPMessage | None) -> None:
        if self._auto_dialect and headers is not None:
            found = dialect_of_server(headers.get("Server", ""))
            if found is not None:
                self.dialect = found
            self._auto_dialect = False

    def identify(self) -> Dialect:
        """The endpoint's dialect, asking it once (`ASK {}`) when none was named and no answer came yet: what a
        client pages by (Virtuoso's sorted-row limit) must be known before the first page."""
        if self._auto_dialect:
            self.query("ASK {}")
        return self.dialect

    def page_limit(self, rows: int) -> int:
        """`rows`, lowered to what the engine lets one sorted page hold (its dialect, or a row cap it showed)."""
        caps = [c for c in (self.dialect.max_sorted_rows, self.server_row_cap) if c]
        return max(1, min([rows, *caps]))

    # ---- failures ----------------------------------------------------------------------------
    def _timeout(self, budget: float, detail: str = "") -> QueryError:
        self._count("timeout")
        return QueryError(f"the endpoint {self.url} did not answer within the time budget of {budget:g} s{detail}",
                          timed_out=True)

    def _count(self, reason: str) -> None:
        with self._lock:
            self.stats.by_reason[reason] = self.stats.by_reason.get(reason, 0) + 1

    def _give_up(self, e: _Retry, attempts: int) -> None:
        with self._lock:
            self.stats.failures += 1
            tries = f"{attempts} attempt{'s' if attempts > 1 else ''}"
            message = f"the endpoint {self.url} failed: {e.message} ({tries})"
            if e.reason == "unreachable":
                message = f"the endpoint {self.url} is {e.message} ({tries})"
                self._down_until = time.monotonic() + self.cooldown_s
                self._down_message = message
        raise EndpointError(message, reason=e.reason, status=e.status)

    def _check_breaker(self) -> None:
        with self._lock:
            wait = self._down_until - time.monotonic()
            message = self._down_message
        if wait > 0:
            self._count("cooldown")
            raise EndpointError(f"{message}; not retried for another {wait:.1f} s", reason="unreachable")

    # ---- answers -----------------------------------------------------------------------------
    def _convert(self, form: str, ctype: str, body: bytes, cap: int | None) -> QueryResult:
        if form in ("construct", "describe"):
            return self._convert_graph(ctype, body, cap)
        try:
            data = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise self._malformed(f"not JSON ({e})", ctype, body) from None
        if not isinstance(data, dict):
            raise self._malformed("not a JSON object", ctype, body)
        if form == "ask":
            if not isinstance(data.get("boolean"), bool):
                raise self._malformed("an ASK answer without a boolean", ctype, body)
            return QueryResult(kind="ask", boolean=data["boolean"])
        head, results = data.get("head"), data.get("results")
        bindings = results.get("bindings") if isinstance(results, dict) else None
        names = head.get("vars") if isinstance(head, dict) else None
        if not isinstance(names, list) or not isinstance(bindings, list):
            raise self._malformed("a SELECT answer without head.vars and results.bindings", ctype, body)
        rows: list[list[Term | None]] = []
        try:
            for b in bindings:
                rows.append([_term(b.get(n)) for n in names])
        except (AttributeError, TypeError, KeyError) as e:
            raise self._malformed(f"a malformed binding ({type(e).__name__}: {e})", ctype, body) from None
        truncated = cap is not None and len(rows) > cap
        return QueryResult(kind="select", vars=[str(n) for n in names], rows=rows[:cap] if truncated else rows,
                           truncated=truncated)

    def _convert_graph(self, ctype: str, body: bytes, cap: int | None) -> QueryResult:
        import pyoxigraph as ox

        media = ctype.split(";")[0].strip() or "application/n-triples"
        fmt = ox.RdfFormat.from_media_type(media)
        if fmt is None:
            raise self._malformed(f"an RDF answer in an unknown media type {media!r}", ctype, body)
        try:
            triples = [[term_to_dict(t.subject), term_to_dict(t.predicate), term_to_dict(t.object)]
                       for t in ox.parse(body, format=fmt)]
        except SyntaxError as e:
            raise self._malformed(f"RDF that does not parse ({e})", ctype, body) from None
        truncated = cap is not None and len(triples) > cap
        return QueryResult(kind="graph", vars=["subject", "predicate", "object"],
                           rows=triples[:cap] if truncated else triples, truncated=truncated)  # type: ignore[arg-type]

    def _malformed(self, what: str, ctype: str, body: bytes) -> EndpointError:
        self._count("malformed")
        start = body[:120].decode("utf-8", "replace").replace("\n", " ")
        return EndpointError(f"the endpoint {self.url} answered with {what}; content type {ctype or 'none'!r}, "
                             f"starting {start!r}", reason="malformed")


def _term(t: JsonObject | None) -> Term | None:
    """A SPARQL JSON term as `LocalStore` gives it: xsd:string and rdf:langString datatypes dropped,
    Virtuoso's old `typed-literal` read as a literal."""
    if t is None:
        return None
    kind = t["type"]
    if kind in ("literal", "typed-literal"):
        d: Term = {"type": "literal", "value": str(t["value"])}
        if t.get("xml:lang"):
            d["xml:lang"] = str(t["xml:lang"])
        elif t.get("datatype") and t["datatype"] not in (_XSD_STRING, _RDF_LANG_STRING):
            d["datatype"] = str(t["datatype"])
        return d
    if kind in ("uri", "bnode"):
        return {"type": kind, "value": str(t["value"])}
    if kind == "triple":  # RDF-star: the value is {subject, predicate, object}
        v = t["value"]
        parts = [_term(v[k]) for k in ("subject", "predicate", "object")]
        return {"type": "triple", "value": " ".join(p["value"] if p else "" for p in parts)}
    raise KeyError(f"unknown term type {kind!r}")


def _timeout_value(dialect: Dialect, seconds: float) -> str:
    if dialect.timeout_unit == "ms":
        return str(max(1, int(seconds * 1000)))
    if dialect.timeout_unit == "qlever":
        return f"{max(1, int(seconds))}s"
    return str(max(1, int(seconds)))


def _error_text(e: urllib.error.HTTPError) -> str:
    try:
        text = e.read(2000).decode("utf-8", "replace")
    except (OSError, http.client.HTTPException):
        return ""
    return " ".join(text.split())[:300]


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    if value.strip().isdigit():
        return float(value.strip())
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _reason(reason: str | BaseException) -> str:  # URLError.reason
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    if isinstance(reason, socket.gaierror):
        return f"unknown host: {reason}"
    return str(reason)
