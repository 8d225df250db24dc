"""Model backends (prompt -> text, `kbqa.backends.base.Backend`). `BACKENDS` is the one list of them.

A factory takes the `ModelSettings` and returns a Backend that loads its model lazily (on the first
`generate`). Each backend is also a translator name (`--backend openai`): a model translator over it.
"""

from kbqa.registry import Registry

BACKENDS = Registry("backend")
BACKENDS.add("openai", "an OpenAI-compatible HTTP server (vLLM, llama.cpp server, Ollama, hosted APIs)",
             "kbqa.backends.openai:OpenAIBackend.from_settings")
BACKENDS.add("llama-cpp", "llama.cpp in this process: a GGUF model, output constrained by a GBNF grammar",
             "kbqa.backends.llama_cpp:LlamaCppBackend.from_settings")
BACKENDS.add("hf", "Hugging Face transformers (+ a peft LoRA adapter made by `kbqa train`)",
             "kbqa.backends.hf:HFBackend.from_settings")
