"""The rank stage: score, check by execution, score again (`check.rank_by_execution`).

- `rankers.py`: `load_ranker` reads either format: `ranker.json` (shipped, fitted trees) or linear weights
  (`weights.json`, hand-set reference); `trees.py`: the trees, read with numpy;
- `check.py`: the execution check in score order within the time budget;
- `chooser.py`: a model as chooser among the top candidates (`--explore-chooser`).
"""
