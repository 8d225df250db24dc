"""Distil the shipped all-MiniLM-L6-v2 into the static embedding model kbqa embeds with by default.

Run once, offline, from the repository root, with the distill extra installed in a venv of its own
(`pip install -e '.[distill]'`: model2vec pins transformers below 5.4):

    HF_HUB_OFFLINE=1 python scripts/distill_static_embedder.py

model2vec runs MiniLM over every token of its vocabulary (one forward pass per token), reduces the
token vectors with PCA and folds in SIF weights; inference is then a token-vector lookup and a mean
(grounding/static_embedder.py, numpy + `tokenizers`, no torch). The output is committed under
grounding/models/minilm-static/ (vectors.npy, tokenizer.json, config.json): a `make demo` install
has no torch to rebuild it with. config.json records the fingerprint the index metadata is checked
against, so re-running this script with other settings makes existing indexes refuse to open until
they are rebuilt (`kbqa index --rebuild`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grounding.embedder import resolve_model  # noqa: E402
from grounding.static_embedder import STATIC_DIR, fingerprint_files  # noqa: E402


def quantize_int8(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 with one scale per token: half the size of float16, and each token keeps 8 bits of its own
    range. (One global scale rounds the SIF-down-weighted frequent tokens, "the", ",", to zero.)"""
    scales = np.maximum(np.abs(vectors).max(axis=1), 1e-12) / 127.0
    return np.clip(np.rint(vectors / scales[:, None]), -127, 127).astype(np.int8), scales.astype(np.float32)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", default="all-MiniLM-L6-v2", help="sentence-transformers model (name or folder)")
    ap.add_argument("--pca-dims", type=int, default=256)
    ap.add_argument("--dtype", choices=["int8", "float16"], default="int8")
    ap.add_argument("--out", type=Path, default=STATIC_DIR)
    args = ap.parse_args(argv)

    from model2vec import __version__ as m2v_version
    from model2vec.distill import distill

    source = resolve_model(args.source)
    t0 = time.perf_counter()
    model = distill(model_name=source, pca_dims=args.pca_dims, quantize_to="float32")
    seconds = time.perf_counter() - t0
    vectors = np.asarray(model.embedding, dtype=np.float32)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.dtype == "int8":
        stored, scales = quantize_int8(vectors)
    else:
        stored, scales = vectors.astype(np.float16), np.ones(len(vectors), dtype=np.float32)
    np.save(args.out / "vectors.npy", stored, allow_pickle=False)
    np.save(args.out / "scales.npy", scales, allow_pickle=False)
    model.tokenizer.save(str(args.out / "tokenizer.json"))
    config = {
        "name": "minilm-static",
        "source": args.source,
        "source_sha256": hashlib.sha256((Path(source) / "model.safetensors").read_bytes()).hexdigest()
        if (Path(source) / "model.safetensors").is_file() else None,
        "model2vec": m2v_version,
        "pca_dims": args.pca_dims,
        "dtype": args.dtype,
        "dim": int(stored.shape[1]),
        "vocab": int(stored.shape[0]),
        "max_tokens": 512,
        "fingerprint": fingerprint_files(args.out),
        "distill_seconds": round(seconds, 1),
    }
    (args.out / "config.json").write_text(json.dumps(config, indent=1) + "\n", encoding="utf-8")
    size = sum(p.stat().st_size for p in args.out.iterdir()) / 1e6
    print(f"distilled {config['vocab']} tokens x {config['dim']} ({args.dtype}) in {seconds:.1f} s: "
          f"{args.out} ({size:.1f} MB), fingerprint {config['fingerprint']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
