"""The registries of kbqa's plug-in points, translators and model backends, as name → factory tables.

The registries' class lives in `kb_dumps/registry.py` (the lowest layer: grounding's vector stores use it too).
The tables live here, at the bottom of `kbqa`, because the settings (`kbqa/settings.py`) validate names against them
and the translators and backends depend on the settings: factories are "module:function" strings, imported on
first use, so this module imports none of them. Front-ends are `kbqa.frontends.FRONTENDS`.
"""

from kb_dumps.registry import Entry, Registry

__all__ = ["BACKENDS", "TRANSLATORS", "Entry", "Registry"]

TRANSLATORS = Registry("translator")
TRANSLATORS.add("cases", "no model: the nearest solved questions of the store's case bank, slots re-filled",
                "kbqa.translators.cases:make")
TRANSLATORS.add("explore", "no model: query graphs proposed by the knowledge graph itself, checked by execution "
                "and ranked (works on any RDF graph, no solved case needed)", "kbqa.translators.explore:make")
TRANSLATORS.add("model", "a model writes the front-end text (--backend: llama-cpp, openai, hf), with few-shot cases, "
                "a GBNF grammar and repair turns", "kbqa.translators.model:make")
TRANSLATORS.add("structure", "no model: the query skeleton and slots learned from the Wikidata train sets (for "
                "questions whose facts the store lacks; query-level Wikidata benchmarks)",
                "kbqa.translators.structure.translator:make")
TRANSLATORS.add("replay", "recorded model outputs from a JSONL file (id, output), for offline evaluation",
                "kbqa.translators.replay:make")

BACKENDS = Registry("backend")
BACKENDS.add("openai", "an OpenAI-compatible HTTP server (vLLM, llama.cpp server, Ollama, hosted APIs)",
             "kbqa.backends.openai:OpenAIBackend.from_settings")
BACKENDS.add("llama-cpp", "llama.cpp in this process: a GGUF model, output constrained by a GBNF grammar",
             "kbqa.backends.llama_cpp:LlamaCppBackend.from_settings")
BACKENDS.add("hf", "Hugging Face transformers (+ a peft LoRA adapter made by `kbqa train`)",
             "kbqa.backends.hf:HFBackend.from_settings")
