"""Settings: one typed object read from the environment (KBQA_*) and an optional `kbqa.toml`/JSON file."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Every setting is documented where it is declared; environment variables are `KBQA_<NAME>`."""

    model_config = SettingsConfigDict(env_prefix="KBQA_", env_file=".env", extra="ignore")

    # Where bundled stores, indexes, model caches live (the default store is <home>/stores/wikidata-mini).
    home: Path = Field(default=Path(".kbqa"))
    # The bundled sample KB used when no --store is given; built on first use.
    default_sample: str = "wikidata-mini"
    # Query time budget (seconds) and row cap for every query the engine runs.
    query_timeout_s: float = 10.0
    row_cap: int = 10_000
    # Embedder of the vector index and the case bank (`kbqa index --embedder`): `minilm-static` (default; a
    # static model distilled from all-MiniLM-L6-v2, no torch), `minilm` (all-MiniLM-L6-v2 itself, train
    # extra), or any sentence-transformers name or folder. Queries use the embedder the index was built with.
    embedding_model: str = "minilm-static"
    # Calibrated grounding score below which a placeholder gets "no grounding" instead of a guess.
    grounding_threshold: float = 0.45

    @property
    def stores_dir(self) -> Path:
        return self.home / "stores"

    def default_store(self) -> Path:
        return self.stores_dir / self.default_sample


def get_settings() -> Settings:
    return Settings()
