"""The settings of kbqa, one section per part, each field documented where it is declared.

Sections (each a typed object read from arguments, the environment, `.env`; the translator also from `kbqa.toml`):

| section | class | environment |
|---|---|---|
| store | `StoreSettings`: where stores live, the query time budget and row cap | `KBQA_<NAME>` |
| grounding | `GroundingSettings`: the embedder, the "no grounding" threshold | `KBQA_<NAME>` |
| front-end | `FrontendSettings`: the per-request caps of QCompiler and PyRAG texts | `KBQA_<NAME>` |
| translator | `TranslatorSettings`: which translator, the model backend and its model, repair rounds | `KBQA_<NAME>` |
| server | `ServerSettings`: `kbqa serve` / `kbqa mcp` limits | `KBQA_SERVER_<NAME>` |

(A remote SPARQL endpoint's connection settings, `KBQA_ENDPOINT_*`, are `kb_dumps.endpoint_settings`: the store layer
reads them itself.) `get_settings()` gives every section, each read on first use, so a bad `KBQA_SERVER_*` value
never stops `kbqa ask`. A value out of its type's range is one usage line naming its variable
(`kb_dumps.settings_types`). `kbqa.pipeline.Engine.from_settings(**overrides)` is how every face builds an engine.
"""

from __future__ import annotations

import os
import sys
import tomllib
from dataclasses import dataclass
from datetime import date, datetime, time
from pathlib import Path
from typing import Annotated, Any, Generic, Literal, TypeAlias, TypeVar

from pydantic import Field, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from kb_dumps.json_types import JsonValue
from kb_dumps.settings_types import (
    Cap,
    CheckedSettings,
    Count,
    Delay,
    Port,
    Rate,
    Rounds,
    Score,
    Seconds,
    Workers,
)

# The settings file: KBQA_CONFIG names it; otherwise ./kbqa.toml when present. Only its [models] table is read.
CONFIG_ENV = "KBQA_CONFIG"
DEFAULT_CONFIG = "kbqa.toml"

# The model translator: the translator name that `--backend PROVIDER` alone implies.
MODEL_TRANSLATOR = "model"

# A value given for a setting (a CLI flag, a keyword of `get_settings`); None = not given. Validated by its field.
SettingValue: TypeAlias = str | int | float | bool | Path | dict[str, JsonValue] | None
# A value of the settings file (what `tomllib` reads).
TomlValue: TypeAlias = str | int | float | bool | datetime | date | time | list["TomlValue"] | dict[str, "TomlValue"]

_noted: set[str] = set()


def deprecated(old: str, new: str) -> None:
    """One line on stderr, once per process, for a deprecated name that is still accepted."""
    if old not in _noted:
        _noted.add(old)
        print(f"note: {old} is deprecated; use {new}", file=sys.stderr)


# ---- store ------------------------------------------------------------------------------------------------
class StoreSettings(CheckedSettings):
    """Where stores live and what bounds every query the engine runs."""

    model_config = SettingsConfigDict(env_prefix="KBQA_", env_file=".env", extra="ignore")

    # Where bundled stores, indexes, model caches live (the default store is <home>/stores/wikidata-mini).
    home: Path = Field(default=Path(".kbqa"))
    # The bundled sample KB used when no --store is given; built on first use.
    default_sample: str = "wikidata-mini"
    # Query time budget (seconds) and row cap for every query the engine runs.
    query_timeout_s: Seconds = 10.0
    row_cap: Cap = 10_000

    @property
    def stores_dir(self) -> Path:
        return self.home / "stores"

    def default_store(self) -> Path:
        return self.stores_dir / self.default_sample


# ---- grounding --------------------------------------------------------------------------------------------
class GroundingSettings(CheckedSettings):
    """How placeholders are grounded."""

    model_config = SettingsConfigDict(env_prefix="KBQA_", env_file=".env", extra="ignore")

    # Embedder of the vector index and the case bank (`kbqa index --embedder`): `minilm-static` (default; a
    # static model distilled from all-MiniLM-L6-v2, no torch), `minilm` (all-MiniLM-L6-v2 itself, train
    # extra), or any sentence-transformers name or folder. Queries use the embedder the index was built with.
    embedding_model: str = "minilm-static"
    # Calibrated grounding score below which a placeholder gets "no grounding" instead of a guess.
    grounding_threshold: Score = 0.45


# ---- front-ends -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RequestCaps:
    """The per-request caps of `FrontendSettings` as plain data: what the Engine hands its QCompiler and PyRAG
    front-ends, so the CLI, HTTP and MCP all get them."""

    max_leaves: int = 50
    max_subquestions: int = 20
    max_program_lines: int = 200

    def refusal(self, what: str, count: int, cap: int, setting: str) -> str:
        """The message of a text over a cap: the count, the cap, and the setting that raises it."""
        return (f"{what}: {count}, more than the {cap} allowed per request "
                f"(setting {setting}, environment KBQA_{setting.upper()})")


class FrontendSettings(CheckedSettings):
    """Per-request caps on the work one front-end text may ask for (each leaf or sub-question is a translator call,
    each program line a lowering step): a text over a cap is refused at stage `validate` before any translation,
    so one request cannot hold an engine for minutes (issue 15: 600 leaves held it 26 s)."""

    model_config = SettingsConfigDict(env_prefix="KBQA_", env_file=".env", extra="ignore")

    max_leaves: Count = 50  # QCompiler leaves per expression
    max_subquestions: Count = 20  # PyRAG ask_kb(...) calls per program
    max_program_lines: Count = 200  # PyRAG statements per program

    def caps(self) -> RequestCaps:
        return RequestCaps(self.max_leaves, self.max_subquestions, self.max_program_lines)


# ---- translator -------------------------------------------------------------------------------------------
class _TomlModelsTable(PydanticBaseSettingsSource):
    """The `[models]` table of the settings file (absent file or table: nothing)."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[TomlValue, str, bool]:
        return self._table().get(field_name), field_name, False

    def _table(self) -> dict[str, TomlValue]:
        path = Path(os.environ.get(CONFIG_ENV, DEFAULT_CONFIG))
        if not path.is_file():
            return {}
        with open(path, "rb") as f:
            data = tomllib.load(f)
        table = data.get("models", {})
        return table if isinstance(table, dict) else {}

    def __call__(self) -> dict[str, TomlValue]:
        return {k: v for k, v in self._table().items() if k in self.settings_cls.model_fields}


def split_translator_backend(translator: str | None, backend: str | None, *, where: str = "--backend"
                             ) -> tuple[str | None, str | None]:
    """(translator, backend) from what was given: `backend` names a model provider only; a translator name given as
    the backend (the old `--backend explore|cases|replay`) is accepted with a deprecation note; a provider given
    without a translator implies the model translator."""
    from kbqa.registry import TRANSLATORS

    if backend and backend in TRANSLATORS and backend != MODEL_TRANSLATOR:
        deprecated(f"{where} {backend}", f"{'--translator' if where.startswith('--') else 'the translator field'} "
                                         f"{backend} ({where} names a model provider: llama-cpp, openai, hf)")
        return translator or backend, None
    if backend and not translator:
        return MODEL_TRANSLATOR, backend
    return translator, backend


class TranslatorSettings(CheckedSettings):
    """How questions are translated. Environment variables are `KBQA_<NAME>` (e.g. KBQA_TRANSLATOR=model,
    KBQA_BACKEND=openai); the `[models]` table of `kbqa.toml` (or the file KBQA_CONFIG names) is read last."""

    model_config = SettingsConfigDict(env_prefix="KBQA_", env_file=".env", extra="ignore")

    # Which translator answers `kbqa ask`: a name of `kbqa.translators.TRANSLATORS` — explore (no model, the
    # default: it answers better than cases on every dev set, BENCHMARKS.md "explore"), cases (no model, the case
    # bank), model (a model writes the text, over `backend`), replay (recorded model outputs).
    translator: str = "explore"
    # The model translator's provider (`kbqa.backends.BACKENDS`): openai, llama-cpp, hf. Given alone (no translator
    # set), it implies the model translator. A translator name here (the old KBQA_BACKEND=explore) is still
    # accepted, with a deprecation note.
    backend: str = ""
    # Model name (openai: the server's model id) or path (llama-cpp: a GGUF file; hf: a checkpoint folder).
    model: str = ""
    # Base URL of an OpenAI-compatible server (…/v1); chat completions are posted to <endpoint>/chat/completions.
    endpoint: str = "http://127.0.0.1:8080/v1"
    # Name of the environment variable holding the API key (the key itself never sits in a settings file).
    api_key_env: str = "OPENAI_API_KEY"
    # Seconds to wait for a connection, and for the whole answer of one request.
    connect_timeout_s: Seconds = 5.0
    timeout_s: Seconds = 120.0
    # Retries after a failed request (connection refused, timeout, HTTP 429/5xx), with exponential backoff.
    retries: Rounds = 2
    backoff_s: Delay = 0.5
    # Generation limits for model backends.
    max_tokens: Count = 512
    temperature: Rate = 0.0
    # Request field that carries a GBNF grammar: "grammar" (llama.cpp server), "guided_grammar" (vLLM), "" (none).
    grammar_field: str = ""
    # Extra JSON fields merged into every chat-completions request (server-specific options).
    extra_body: dict[str, Any] = Field(default_factory=dict)
    # Times a failed model output goes back to the model with its errors (compiler-style self-repair).
    repair_rounds: Rounds = 2
    # Replay: the JSONL of recorded outputs ({"id", "output"} per line).
    replay_path: Path | None = None
    # Case bank: nearest cases retrieved per question (structure vote / few-shot examples in prompts).
    cases_k: Count = 20
    few_shot_k: Annotated[int, Field(ge=0)] = 4
    # Whether the cases translator checks candidate (entity, property) pairs against the store.
    cases_kb_check: bool = True
    # explore: seconds of query-graph search per question, and the most candidates built (best found so far wins).
    explore_budget_s: Seconds = 2.0
    explore_cap: Count = 400
    # explore: ranker weights (JSON, `kbqa train --ranker` writes them); empty = the shipped weights.
    explore_weights: Path | None = None
    # explore: when the nearest case's re-grounded structure replaces the search — auto (no candidate / a bare
    # class list), fitted (auto with the fitted fact-lack decision on a Wikidata store), always (a sample store that
    # lacks most facts), never.
    explore_fallback: Literal["auto", "fitted", "always", "never"] = "auto"
    # explore: a model backend (openai, llama-cpp, hf; over `model` / `endpoint` above) that picks one of the ranker's
    # top `explore_chooser_k` candidates from their verbalisations, answering one number; "" = the ranker's pick.
    explore_chooser: str = ""
    explore_chooser_k: int = Field(default=5, ge=2, le=9)

    @model_validator(mode="before")
    @classmethod
    def _split_backend(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("backend"):
            translator, backend = split_translator_backend(data.get("translator"), str(data["backend"]),
                                                           where="KBQA_BACKEND / backend")
            data = {**data, "backend": backend or ""}
            if translator:
                data["translator"] = translator
        return data

    @field_validator("explore_chooser")
    @classmethod
    def _known_chooser(cls, value: str) -> str:
        from kbqa.registry import BACKENDS

        value = "" if value.strip().lower() in ("", "none") else value.strip()
        if value and value not in BACKENDS.names():
            raise ValueError(f"unknown explore chooser {value!r}; choose none or one of {', '.join(BACKENDS.names())}")
        return value

    @field_validator("translator")
    @classmethod
    def _known_translator(cls, value: str) -> str:
        from kbqa.registry import TRANSLATORS

        if value not in TRANSLATORS:
            raise ValueError(f"unknown translator {value!r}; choose one of {', '.join(TRANSLATORS.names())}")
        return value

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        from kbqa.registry import BACKENDS

        if value and value not in BACKENDS.names():
            raise ValueError(f"unknown model backend {value!r}; choose one of {', '.join(BACKENDS.names())}")
        return value

    @model_validator(mode="after")
    def _model_needs_backend(self) -> TranslatorSettings:
        if self.translator == MODEL_TRANSLATOR and not self.backend:
            from kbqa.registry import BACKENDS

            raise ValueError(f"the model translator needs a backend: --backend / KBQA_BACKEND, one of "
                             f"{', '.join(BACKENDS.names())}")
        return self

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource,
                                   ) -> tuple[PydanticBaseSettingsSource, ...]:
        # arguments win over the environment, which wins over .env, which wins over the settings file
        return init_settings, env_settings, dotenv_settings, _TomlModelsTable(settings_cls)

    def api_key(self) -> str | None:
        """The API key from the environment variable named by `api_key_env` (None when unset)."""
        return os.environ.get(self.api_key_env) or None if self.api_key_env else None

    @property
    def who(self) -> str:
        """The translator as a system name: `explore`, `model:openai`."""
        return f"{self.translator}:{self.backend}" if self.translator == MODEL_TRANSLATOR else self.translator


def get_translator_settings(**overrides: SettingValue) -> TranslatorSettings:
    """Translator settings with explicit overrides (None values are ignored, so CLI flags can be passed straight
    in). A bad KBQA_* value or flag is one usage line naming the setting (`SettingsError`), not a pydantic dump."""
    return TranslatorSettings(**{k: v for k, v in overrides.items() if v is not None})


# ---- server -----------------------------------------------------------------------------------------------
class ServerSettings(CheckedSettings):
    """Everything `create_app` and the MCP server need; each limit is documented where it is declared, with its
    range (a value out of it is a usage error naming its KBQA_SERVER_* variable)."""

    model_config = SettingsConfigDict(env_prefix="KBQA_SERVER_", extra="ignore")

    # The store directory (made by `kbqa ingest`); None serves "generate only" without /sparql.
    store: Path | None = None
    host: str = "127.0.0.1"
    port: Port = 8000

    # Translator of /v1/ask and /v1/generate, and the model translator's provider, as `kbqa ask --translator /
    # --backend` (None: the translator settings, KBQA_TRANSLATOR / KBQA_BACKEND).
    translator: str | None = None
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

    @model_validator(mode="before")
    @classmethod
    def _split_backend(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("backend"):
            translator, backend = split_translator_backend(data.get("translator"), str(data["backend"]),
                                                           where="KBQA_SERVER_BACKEND / backend")
            data = {**data, "backend": backend, "translator": translator}
        return data


# ---- all sections -----------------------------------------------------------------------------------------
S = TypeVar("S", bound=CheckedSettings)


class _Section(Generic[S]):
    """A section of `Settings`: read on first use, with the overrides its class declares, then kept."""

    def __init__(self, cls: type[S], *, takes_overrides: bool = True):
        self.cls, self.takes_overrides = cls, takes_overrides

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Settings | None, owner: type | None = None) -> S:
        if obj is None:
            raise AttributeError(self.name)
        if self.name not in obj.__dict__:
            given = obj.overrides if self.takes_overrides else {}
            obj.__dict__[self.name] = self.cls(**{k: v for k, v in given.items() if k in self.cls.model_fields})
        return obj.__dict__[self.name]


class Settings:
    """Every section of one process's settings, each read on first use. `overrides` (field name → value, None =
    not given) go to the section that declares the field; a name no section declares is a TypeError (our bug).
    The server section takes no overrides: `kbqa serve` builds its `ServerSettings` from its flags."""

    store = _Section(StoreSettings)
    grounding = _Section(GroundingSettings)
    frontend = _Section(FrontendSettings)
    translator = _Section(TranslatorSettings)
    server = _Section(ServerSettings, takes_overrides=False)

    def __init__(self, **overrides: SettingValue):
        sections = (StoreSettings, GroundingSettings, FrontendSettings, TranslatorSettings)
        unknown = sorted(set(overrides) - {name for cls in sections for name in cls.model_fields})
        if unknown:
            raise TypeError(f"no settings section declares {', '.join(unknown)}")
        self.overrides = {k: v for k, v in overrides.items() if v is not None}


def get_settings(**overrides: SettingValue) -> Settings:
    """The settings of this process (environment, `.env`, `kbqa.toml`), with `overrides` on top."""
    return Settings(**overrides)
