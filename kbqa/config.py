"""Settings: one typed object read from the environment (KBQA_*) and an optional `kbqa.toml`/JSON file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from kb_dumps.settings_types import Cap, CheckedSettings, Count, Score, Seconds


@dataclass(frozen=True)
class RequestCaps:
    """The per-request caps of `Settings` (max_leaves, max_subquestions, max_program_lines) as plain data:
    what the Engine hands its QCompiler and PyRAG front-ends, so the CLI, HTTP and MCP all get them."""

    max_leaves: int = 50
    max_subquestions: int = 20
    max_program_lines: int = 200

    def refusal(self, what: str, count: int, cap: int, setting: str) -> str:
        """The message of a text over a cap: the count, the cap, and the setting that raises it."""
        return (f"{what}: {count}, more than the {cap} allowed per request "
                f"(setting {setting}, environment KBQA_{setting.upper()})")


class Settings(CheckedSettings):
    """Every setting is documented where it is declared; environment variables are `KBQA_<NAME>`. A value out of
    its type's range is a usage error naming the variable (`kb_dumps.settings_types`)."""

    model_config = SettingsConfigDict(env_prefix="KBQA_", env_file=".env", extra="ignore")

    # Where bundled stores, indexes, model caches live (the default store is <home>/stores/wikidata-mini).
    home: Path = Field(default=Path(".kbqa"))
    # The bundled sample KB used when no --store is given; built on first use.
    default_sample: str = "wikidata-mini"
    # Query time budget (seconds) and row cap for every query the engine runs.
    query_timeout_s: Seconds = 10.0
    row_cap: Cap = 10_000
    # Embedder of the vector index and the case bank (`kbqa index --embedder`): `minilm-static` (default; a
    # static model distilled from all-MiniLM-L6-v2, no torch), `minilm` (all-MiniLM-L6-v2 itself, train
    # extra), or any sentence-transformers name or folder. Queries use the embedder the index was built with.
    embedding_model: str = "minilm-static"
    # Calibrated grounding score below which a placeholder gets "no grounding" instead of a guess.
    grounding_threshold: Score = 0.45
    # Per-request caps on the work one front-end text may ask for (each leaf or sub-question is a translator
    # call, each program line a lowering step): a text over a cap is refused at stage `validate` before any
    # translation, so one request cannot hold an engine for minutes (issue 15: 600 leaves held it 26 s).
    max_leaves: Count = 50  # QCompiler leaves per expression
    max_subquestions: Count = 20  # PyRAG ask_kb(...) calls per program
    max_program_lines: Count = 200  # PyRAG statements per program

    def caps(self) -> RequestCaps:
        return RequestCaps(self.max_leaves, self.max_subquestions, self.max_program_lines)

    @property
    def stores_dir(self) -> Path:
        return self.home / "stores"

    def default_store(self) -> Path:
        return self.stores_dir / self.default_sample


def get_settings() -> Settings:
    return Settings()
