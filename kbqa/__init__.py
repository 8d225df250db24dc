"""kbqa: offline-first knowledge-graph question answering with checked SPARQL."""

__version__ = "0.1.0"


def __getattr__(name: str):  # noqa: ANN202 - lazy: `import kbqa` stays cheap
    if name == "Engine":
        from kbqa.pipeline import Engine

        return Engine
    raise AttributeError(f"module 'kbqa' has no attribute {name!r}")
