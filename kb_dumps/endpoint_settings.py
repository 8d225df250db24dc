"""Endpoint settings: engine dialects, settings from the environment (`KBQA_ENDPOINT_*`), the rate limiter."""

from __future__ import annotations

import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import Literal

from pydantic import SecretStr
from pydantic_settings import SettingsConfigDict

from kb_dumps.settings_types import CheckedSettings, Count, Delay, Rate, Rounds
from kb_dumps.stage_errors import QueryError, StoreError


@dataclass(frozen=True)
class Dialect:
    """What differs between SPARQL engines, as data (kb_dumps/README.md "Remote endpoints")."""

    name: str
    # SERVICE wikibase:label is run by the engine (Blazegraph with the Wikidata extensions).
    label_service: bool = False
    # URL parameter that asks the engine itself to stop a query, and how its value is written.
    timeout_param: str | None = None
    timeout_unit: Literal["s", "ms", "qlever"] = "s"
    # Requests per second when no rate is configured (the WDQS usage policy limits clients).
    default_rate: float = 0.0
    # The `Server:` response header starts with this: an endpoint first taken as `generic` is this engine.
    server_header: str | None = None
    # The most rows a query with ORDER BY may ask for (LIMIT + OFFSET): keyset pages are cut to it.
    max_sorted_rows: int | None = None
    # An HTTP error whose text matches this is the engine refusing the query (a bad query, a limit), not a
    # fault worth a retry: Virtuoso answers every SPARQL error with HTTP 500.
    query_error: str | None = None
    # Rewrites of the query text where the engine's answer differs from the standard's (kb_dumps/endpoint_rewrites.py).
    rewrites: tuple[str, ...] = ()


DIALECTS: dict[str, Dialect] = {
    "generic": Dialect("generic"),
    "oxigraph": Dialect("oxigraph"),
    "wdqs": Dialect("wdqs", label_service=True, default_rate=5.0),
    # Parameter names from the engine's documentation; not exercised by the test suite.
    "qlever": Dialect("qlever", timeout_param="timeout", timeout_unit="qlever"),
    # Checked against Debian's virtuoso-opensource 7.2 (tests/test_endpoint_virtuoso.py): with `timeout` (ms)
    # the engine answers 200 with the rows found so far (an "anytime" query); see the VIRTUOSO_* markers below.
    # MaxSortedTopRows (10,000 by default) refuses a larger sorted LIMIT with "SR353"; errors are
    # "Virtuoso <SQL state> Error <code>: …" with HTTP 500, except connection states (08xxx).
    "virtuoso": Dialect("virtuoso", timeout_param="timeout", timeout_unit="ms", server_header="Virtuoso/",
                        max_sorted_rows=10_000, query_error=r"Virtuoso (?!08)[0-9A-Z]{5} Error",
                        rewrites=("min_of_strings",)),
}
WDQS_HOSTS = ("query.wikidata.org",)

# What engines say in an answer that is not the whole answer, read from any endpoint (a header no engine sends
# otherwise costs nothing to look for). Virtuoso:
# - a query stopped by its time limit (`timeout` parameter or MaxQueryExecutionTime) answers HTTP 200 with the
#   rows found so far and `X-SQL-State: S1TAT` ("Returning incomplete results, query interrupted by result
#   timeout"); an empty or short result is then no answer at all, so the store raises a timeout;
# - without the parameter the same stop is HTTP 500 "S1T00 Error SR171: Transaction timed out": a timeout,
#   not a server fault worth a retry;
# - a result cut by the server's row cap (ResultSetMaxRows, 10,000 on a Debian install) carries
#   `X-SPARQL-MaxRows: N`: the result is truncated whatever LIMIT the query asked for.
PARTIAL_RESULT_HEADERS = {"X-SQL-State": ("S1TAT",)}
TIMEOUT_ERROR_MARKERS = ("SR171", "S1T00", "S1TAT")
SERVER_ROW_CAP_HEADER = "X-SPARQL-MaxRows"


def dialect_of_server(server: str) -> Dialect | None:
    """The dialect whose engine sends this `Server:` header, if any."""
    return next((d for d in DIALECTS.values() if d.server_header and server.startswith(d.server_header)), None)


def detect_dialect(url: str, name: str | None = None) -> Dialect:
    """The dialect named, else `wdqs` for the Wikidata Query Service's host, else `generic`."""
    if name:
        if name not in DIALECTS:
            raise StoreError(f"unknown endpoint dialect {name!r}; choose one of {', '.join(DIALECTS)}", stage="usage")
        return DIALECTS[name]
    host = urllib.parse.urlsplit(url).hostname or ""
    return DIALECTS["wdqs"] if host in WDQS_HOSTS else DIALECTS["generic"]


class EndpointSettings(CheckedSettings):
    """Endpoint settings from the environment (`KBQA_ENDPOINT_<NAME>`) or `.env`; arguments win."""

    model_config = SettingsConfigDict(env_prefix="KBQA_ENDPOINT_", env_file=".env", extra="ignore")

    # HTTP basic auth; only ever read from the environment, never written to a manifest.
    user: str | None = None
    password: SecretStr | None = None
    # Sent as User-Agent (the WDQS policy asks for a contact); default: kbqa/<version>.
    user_agent: str | None = None
    # Extra HTTP headers, a JSON object in the environment: KBQA_ENDPOINT_HEADERS='{"X-Api-Key": "…"}'.
    headers: dict[str, str] = {}
    # Extra attempts after a failed one (connection error, 429, 5xx) and the first backoff in seconds.
    retries: Rounds = 2
    backoff_s: Delay = 0.5
    # Seconds during which queries fail at once after the endpoint could not be reached.
    cooldown_s: Delay = 5.0
    # Queries per second (token bucket, burst `burst`); 0 = the dialect's default (none for most).
    rate: Rate = 0.0
    burst: Count = 1
    # auto: GET when the URL stays short (cacheable), else POST.
    method: Literal["auto", "get", "post"] = "auto"


def kbqa_version() -> str:
    try:
        from importlib.metadata import version

        return version("kbqa")
    except Exception:  # noqa: BLE001 - not installed as a distribution
        return "dev"


class RateLimiter:
    """A token bucket shared by threads: `rate` requests per second, bursts of `burst`."""

    def __init__(self, rate: float, burst: int = 1):
        self.rate, self.burst = rate, max(1, burst)
        self._tat = 0.0  # theoretical arrival time of the next request (GCRA)
        self._lock = threading.Lock()

    def wait(self, deadline: float) -> None:
        if self.rate <= 0:
            return
        interval = 1.0 / self.rate
        with self._lock:
            now = time.monotonic()
            slot = max(now, self._tat - (self.burst - 1) * interval)
            if slot > deadline:
                raise QueryError(f"the client-side rate limit ({self.rate:g} queries/s) leaves no time before the "
                                 "query's deadline", timed_out=True)
            self._tat = max(self._tat, now) + interval
        if slot > now:
            time.sleep(slot - now)
