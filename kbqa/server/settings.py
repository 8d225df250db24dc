"""Server settings: one typed object (arguments of `kbqa serve`, or KBQA_SERVER_* environment variables)."""

from __future__ import annotations

from pathlib import Path

from pydantic_settings import BaseSettings, SettingsConfigDict


class ServerSettings(BaseSettings):
    """Everything `create_app` needs; each limit is documented where it is declared."""

    model_config = SettingsConfigDict(env_prefix="KBQA_SERVER_", extra="ignore")

    # The store directory (made by `kbqa ingest`); None serves "generate only" without /sparql.
    store: Path | None = None
    host: str = "127.0.0.1"
    port: int = 8000

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
    engines: int = 1
    # Query workers of /sparql (each a LocalStore with its own worker process).
    sparql_workers: int = 2
    # Requests (/v1/*, /sparql) being served at once; one more is refused with 429 at once.
    max_inflight: int = 64
    # Seconds a request may wait for a free engine or query worker before it is refused with 503.
    queue_timeout_s: float = 30.0
    # Largest request body in bytes (413 above it).
    max_body_bytes: int = 256 * 1024
    # Longest question in characters (422 above it), longest front-end text of /v1/compile.
    max_question_chars: int = 1000
    max_source_chars: int = 100_000
    # Most questions in one /v1/batch request.
    max_batch: int = 32
    # Seconds one model (translator) call may take; past it the question fails at stage translate (504).
    model_timeout_s: float = 60.0
    # Seconds one /v1/* request may take in all (504 past it; the engine finishes the call in the background).
    request_timeout_s: float = 120.0
    # Time budget (seconds) and row cap of each query, for the engine and /sparql.
    query_timeout_s: float = 10.0
    row_cap: int = 10_000
    # Self-repair rounds of model outputs (as `kbqa ask --repair-rounds`).
    repair_rounds: int = 2
    # Seconds uvicorn waits for open requests on shutdown (SIGTERM / Ctrl-C) before closing them.
    graceful_timeout_s: float = 10.0
