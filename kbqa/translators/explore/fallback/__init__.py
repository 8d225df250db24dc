"""The fallback stage: when the store lacks the facts, the nearest solved case answers instead.

- `facts.py`: does the store hold the facts of the solved questions nearest to this one?
- `cases.py`: `weak` (should the search's answer give way?) and `CaseFallback`: the nearest case's structure
  with every slot re-grounded from the question.
"""
