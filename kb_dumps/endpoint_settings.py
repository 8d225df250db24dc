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


DIALECTS: dict[str, Dialect] = {
    "generic": Dialect("generic"),
    "oxigraph": Dialect("oxigraph"),
    "wdqs": Dialect("wdqs", label_service=True, default_rate=5.0),
    # Parameter names from the engines' documentation; not exercised by the test suite.
    "qlever": Dialect("qlever", timeout_param="timeout", timeout_unit="qlever"),
    "virtuoso": Dialect("virtuoso", timeout_param="timeout", timeout_unit="ms"),
}
WDQS_HOSTS = ("query.wikidata.org",)


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
