"""The fallback stage: when the store lacks the facts, the learned structure or the nearest solved case answers.

- `facts.py`: does the store hold the facts of the solved questions nearest to this one?
- `structure.py`: `StructureFallback`, on a Wikidata store the question's own query structure, learned from the
  Wikidata train sets (the `structure` translator); tried first.
- `cases.py`: `weak` (should the search's answer give way?) and `CaseFallback`: the nearest case's structure
  with every slot re-grounded from the question.
"""
