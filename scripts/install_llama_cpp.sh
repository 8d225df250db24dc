#!/usr/bin/env bash
# Build llama-cpp-python portable into the project venv (optional extra `llama`).
#
# Why: a plain `pip install llama-cpp-python` compiles for the build machine's CPU; where the CPU
# advertises AMX that the VM does not enable, the result dies with "Illegal instruction". We turn
# native tuning and AMX off, keep AVX2/FMA/F16C, and never reuse a cached wheel (it may be the
# bad native build). Idempotent: skips when the installed build imports and evaluates a prompt.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="${VENV:-$ROOT/.venv}"
PY="$VENV/bin/python"
FORCE="${FORCE:-0}"

if [ ! -x "$PY" ]; then
  echo "error: no virtualenv at $VENV (run 'make install' first)" >&2
  exit 2
fi

# The check initialises llama.cpp's CPU backend (ggml builds its fp16 tables with F16C there) and,
# when SmolLM2 is in the model cache, evaluates a prompt: a build with instructions this CPU lacks
# dies here ("Illegal instruction") instead of in a user's first question.
check_build() {
  "$PY" - <<'PY' >/dev/null 2>&1
import os
from pathlib import Path
import llama_cpp
llama_cpp.llama_backend_init()
llama_cpp.llama_print_system_info()
gguf = Path(os.environ.get("KBQA_HOME", ".kbqa")) / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
if gguf.is_file():
    llm = llama_cpp.Llama(model_path=str(gguf), n_ctx=64, verbose=False)
    llm.create_completion("1, 2, 3,", max_tokens=2)
PY
}

if [ "$FORCE" != "1" ] && check_build; then
  echo "llama-cpp-python already installed and working: $("$PY" -c 'import llama_cpp; print(llama_cpp.__version__)')"
  exit 0
fi

export CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
echo "building llama-cpp-python (portable CPU build; takes several minutes)..."
# Uninstall first instead of --force-reinstall: that flag would also reinstall every dependency.
"$VENV/bin/pip" uninstall -y llama-cpp-python >/dev/null 2>&1 || true
"$VENV/bin/pip" install --no-cache-dir --no-binary llama-cpp-python 'llama-cpp-python[server]'

if check_build; then
  echo "llama-cpp-python installed: $("$PY" -c 'import llama_cpp; print(llama_cpp.__version__)')"
else
  echo "error: llama-cpp-python was built but does not run on this CPU" >&2
  exit 1
fi
