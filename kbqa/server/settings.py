"""Server settings: one typed object (arguments of `kbqa serve`, or KBQA_SERVER_* environment variables)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from kb_dumps.settings_types import Cap, CheckedSettings, Count, Delay, Port, Rounds, Seconds, Workers


class ServerSettings(CheckedSettings):
    """Everything `create_app` needs; each limit is documented where it is declared, with its range (a value out
    of it is a usage error naming its KBQA_SERVER_* variable)."""

    model_config = SettingsConfigDict(env_prefix="KBQA_SERVER_", extra="ignore")

    # The store directory (made by `kbqa ingest`); None serves "generate only" without /sparql.
    store: Path | None = None
    host: str = "127.0.0.1"
    port: Port = 8000

    # Translator of /v1/ask and /v1/generate (same names as `kbqa ask`): cases | replay | openai | llama-cpp | hf.
    backend: str | None = None
    model: str | None = None
    model_url: str | None = None  # OpenAI-compatible model server URL (…/v1) of the openai backend
    # A remote SPARQL endpoint that queries (the engine's and /sparql's) go to instead of the store's own data;
    # a remote store directory (`kbqa ingest --endpoint URL --store DIR`) names its endpoint by itself.
    sparql_endpoint: str | None = None
    endpoint_dialect: str | None = None
    replay_path: Path | None = None

    # Engines, each owned by one thread (the Engine is not thread-safe): /v1/* requests run on a free one.
    engines: Workers = 1
    # Query workers of /sparql (each a LocalStore with its own worker process).
    sparql_workers: Workers = 2
    # Requests (/v1/*, /sparql) being served at once; one more is refused with 429 at once.
    max_inflight: Annotated[int, Field(ge=1, le=1_000_000)] = 64
    # Seconds a request may wait for a free engine or query worker before it is refused with 503.
    queue_timeout_s: Seconds = 30.0
    # Largest request body in bytes (413 above it).
    max_body_bytes: Count = 256 * 1024
    # Longest question in characters (422 above it), longest front-end text of /v1/compile.
    max_question_chars: Count = 1000
    max_source_chars: Count = 100_000
    # Most questions in one /v1/batch request.
    max_batch: Count = 32
    # Seconds one model (translator) call may take; past it the question fails at stage translate (504).
    model_timeout_s: Seconds = 60.0
    # Seconds one /v1/* request may take in all (504 past it; the engine finishes the call in the background).
    request_timeout_s: Seconds = 120.0
    # Time budget (seconds) and row cap of each query, for the engine and /sparql.
    query_timeout_s: Seconds = 10.0
    row_cap: Cap = 10_000
    # Self-repair rounds of model outputs (as `kbqa ask --repair-rounds`).
    repair_rounds: Rounds = 2
    # Seconds uvicorn waits for open requests on shutdown (SIGTERM / Ctrl-C) before closing them.
    graceful_timeout_s: Delay = 10.0
