"""The default embedder: a static model distilled from the shipped all-MiniLM-L6-v2 (numpy + `tokenizers`, no torch).

A text's vector is the mean of its tokens' vectors, unit-normalised (model2vec's inference). The
vectors were made once by scripts/distill_static_embedder.py and ship in grounding/models/minilm-static/;
loading them takes milliseconds, where importing torch and MiniLM takes seconds, and embedding runs
at tens of thousands of texts per second on one core (BENCHMARKS.md "Embedders").
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np

from kb_dumps.stage_errors import KBQAError

STATIC_NAME = "minilm-static"
STATIC_DIR = Path(__file__).resolve().parent / "models" / STATIC_NAME
_FILES = ("vectors.npy", "scales.npy", "tokenizer.json")


def fingerprint_files(folder: Path) -> str:
    """sha256 over the files that decide every vector (token vectors, tokenizer), shortened."""
    h = hashlib.sha256()
    for name in _FILES:
        h.update(name.encode())
        h.update((folder / name).read_bytes())
    return "sha256:" + h.hexdigest()[:16]


class StaticEmbedder:
    """Token-vector lookup + mean + normalisation over a model2vec-style folder (vectors.npy, scales.npy,
    tokenizer.json)."""

    kind = "static"

    def __init__(self, folder: str | Path = STATIC_DIR, name: str = STATIC_NAME):
        from tokenizers import Tokenizer  # the Rust tokenizer: a few ms to import, no torch

        folder = Path(folder)
        config_path = folder / "config.json"
        if not config_path.is_file():
            raise KBQAError(f"no static embedding model in {folder}; it ships with kbqa (re-create it with "
                            "`python scripts/distill_static_embedder.py`, train extra)", stage="ground")
        self.config = json.loads(config_path.read_text(encoding="utf-8"))
        self.name = name
        # The fingerprint written at distillation; the index metadata is checked against it.
        self.fingerprint = str(self.config["fingerprint"])
        # int8 with a scale per token on disk (8 MB); float32 in memory (30 MB) so a lookup is one gather
        scales = np.load(folder / "scales.npy", allow_pickle=False).astype(np.float32)
        self.vectors = np.load(folder / "vectors.npy", allow_pickle=False).astype(np.float32) * scales[:, None]
        self.dim = int(self.vectors.shape[1])
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(int(self.config.get("max_tokens", 512)))
        unk = self.tokenizer.token_to_id("[UNK]")
        self._unk = -1 if unk is None else int(unk)

    def encode(self, texts: list[str], batch_size: int = 4096, progress: bool | None = None) -> np.ndarray:
        """Unit-length float32 vectors, one row per text (`progress` is accepted for the MiniLM signature)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), batch_size):
            out[start:start + batch_size] = self._encode_batch(texts[start:start + batch_size])
        return out

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        encs = self.tokenizer.encode_batch_fast(texts, add_special_tokens=False)
        ids = [[i for i in e.ids if i != self._unk] for e in encs]
        lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        has = lengths > 0
        if has.any():
            flat = np.fromiter((i for x in ids for i in x), dtype=np.int64, count=int(lengths.sum()))
            starts = np.concatenate(([0], np.cumsum(lengths[has])[:-1]))
            sums = np.add.reduceat(self.vectors[flat], starts, axis=0)
            out[has] = sums / lengths[has, None]
        # A text with no known token (only symbols), or tokens that cancel out, gets a fixed unit vector,
        # never a zero one: hnswlib's cosine divides by the norm.
        norms = np.linalg.norm(out, axis=1)
        empty = norms < 1e-12
        out[empty, 0], norms[empty] = 1.0, 1.0
        out /= norms[:, None]
        return out

    def encode_one(self, text: str) -> np.ndarray:
        return self._encode_batch([text])[0]


def check_static_files(folder: Path = STATIC_DIR) -> bool:
    """Whether the shipped files still match the fingerprint in their config (a test and a sanity check)."""
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    ok = config.get("fingerprint") == fingerprint_files(folder)
    if not ok:
        print(f"warning: {folder} does not match its fingerprint", file=sys.stderr)
    return ok
