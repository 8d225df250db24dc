"""The lower stage: a query graph written out.

- `patterns.py`: the graph's patterns with one term writer (DeSQ placeholders or SPARQL IRIs);
- `groups.py`: the patterns of property-group graphs;
- `text.py`: `write` (DeSQ or SPARQL) and `verbalise` (one line for the ranker and the chooser);
- `result.py`: the translation result the Engine compiles (DeSQ + what the search did).
"""
