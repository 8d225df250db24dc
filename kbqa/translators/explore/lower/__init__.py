"""The lower stage: a query graph lowered to the Plan (`assembler/plan.py`) and written out.

- `patterns.py`: the graph's Plan nodes, each atomic constraint with its sentence; every confirmed IRI a
  placeholder that carries it;
- `groups.py`: the Plan nodes of property-group graphs;
- `text.py`: `lower` (the Plan), `write` (DeSQ by `kbqa/frontends/desq_writer.py`, or SPARQL by the assembler's
  writer with the confirmed IRIs) and `verbalise` (one line for the ranker and the chooser);
- `result.py`: the translation result the Engine compiles (DeSQ + what the search did).
"""
