"""`explore`: question -> DeSQ by query-graph search over the store, no language model and no solved case needed.

One stage per sub-package, run in this order by `translator.py` (`ExploreTranslator.search`, then `translate`):

- `link/`: the question's cue words, and the classes, predicates, values and entities it names (`Anchors`);
- `propose/`: candidate query graphs (`query.py`'s `Graph`) around the anchors, every shape the schema allows;
- `features/`: each candidate's features (similarity, lexical overlap, the case bank's opinions, structure,
  the question's words, the structure prior; after the execution check, how the candidates' answers agree);
- `rank/`: the fitted ranker (plain-JSON trees, or linear weights) scores them; the best are checked by
  execution and scored again; a model may choose among the top (`chooser.py`);
- `fallback/`: when the store lacks the facts, the nearest solved case's structure re-grounded instead;
- `lower/`: a graph lowered to the Plan (`assembler/plan.py`), written as DeSQ with the URIs the search confirmed
  (what the engine compiles) and as SPARQL for the execution check, both by the engine's own writers.

Every stage reads the `ExploreContext` (`context.py`: store, schema and label memory, KB and language profile,
settings, case bank view), never the translator; the store probes are Plans too (`probes.py`), so explore writes
no SPARQL text itself. Imports point down this list: translator, fallback, rank, features, lower, propose, link,
then context, query and probes (checked by `tests/test_explore_package.py`).
"""

from kbqa.translators.explore.translator import ExploreTranslator, make

__all__ = ["ExploreTranslator", "make"]
