"""Translator settings: one typed object from arguments, the environment (KBQA_*), `.env`, and `kbqa.toml` [models]."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from kb_dumps.settings_types import CheckedSettings, Count, Delay, Rate, Rounds, Seconds

# The settings file: KBQA_CONFIG names it; otherwise ./kbqa.toml when present. Only its [models] table is read.
CONFIG_ENV = "KBQA_CONFIG"
DEFAULT_CONFIG = "kbqa.toml"


class _TomlModelsTable(PydanticBaseSettingsSource):
    """The `[models]` table of the settings file (absent file or table: nothing)."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return self._table().get(field_name), field_name, False

    def _table(self) -> dict[str, Any]:
        path = Path(os.environ.get(CONFIG_ENV, DEFAULT_CONFIG))
        if not path.is_file():
            return {}
        with open(path, "rb") as f:
            data = tomllib.load(f)
        table = data.get("models", {})
        return table if isinstance(table, dict) else {}

    def __call__(self) -> dict[str, Any]:
        return {k: v for k, v in self._table().items() if k in self.settings_cls.model_fields}


class ModelSettings(CheckedSettings):
    """How questions are translated. Environment variables are `KBQA_<NAME>` (e.g. KBQA_BACKEND=openai)."""

    model_config = SettingsConfigDict(env_prefix="KBQA_", env_file=".env", extra="ignore")

    # Which translator answers `kbqa ask`: a name of `kbqa.translators.translator_names()` — explore (no model, the
    # default: it answers better than cases on every dev set, BENCHMARKS.md "explore"), cases (no model, the case
    # bank), replay, or a model backend (openai, llama-cpp, hf).
    backend: str = "explore"
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
    # class list), always (a sample store that lacks most facts), never.
    explore_fallback: Literal["auto", "always", "never"] = "auto"

    # explore: a model backend (openai, llama-cpp, hf; over `model` / `endpoint` above) that picks one of the ranker's
    # top `explore_chooser_k` candidates from their verbalisations, answering one number; "" = the ranker's pick.
    explore_chooser: str = ""
    explore_chooser_k: int = Field(default=5, ge=2, le=9)

    @field_validator("explore_chooser")
    @classmethod
    def _known_chooser(cls, value: str) -> str:
        from kbqa.backends import BACKENDS

        value = "" if value.strip().lower() in ("", "none") else value.strip()
        if value and value not in BACKENDS.names():
            raise ValueError(f"unknown explore chooser {value!r}; choose none or one of {', '.join(BACKENDS.names())}")
        return value

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        from kbqa.translators import translator_names

        if value not in translator_names():
            raise ValueError(f"unknown backend {value!r}; choose one of {', '.join(translator_names())}")
        return value

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


def get_model_settings(**overrides: Any) -> ModelSettings:
    """Settings with explicit overrides (None values are ignored, so CLI flags can be passed straight in). A bad
    KBQA_* value or flag is one usage line naming the setting (`SettingsError`), not a pydantic dump."""
    return ModelSettings(**{k: v for k, v in overrides.items() if v is not None})
