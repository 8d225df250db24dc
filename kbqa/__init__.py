"""kbqa: offline-first knowledge-graph question answering with checked SPARQL."""

__version__ = "0.1.0"
