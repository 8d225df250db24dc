"""The link stage: what a question names that the store knows (`anchors.link_question` -> `Anchors`).

- `words.py`: cue words (`read_cues`), class and predicate words (`link_schema`), quoted and bare values;
- `name_match.py`: how well a span names a class or predicate (same words or root, joined, shortened, initials);
- `entities.py`: entity mentions through the store's lexical index, qualified by a class word after them;
- `names.py`: names written differently from a label (no apostrophe, a short form): weak links;
- `groups.py`: super-properties a question names (a property group);
- `partial.py`: classes and predicates named by part of their name; a class word inside a quoted value;
- `meaning.py`: predicates of the named classes that a word of like meaning names ("gender" / *sex*), by the
  static embedder, weaker than any name link;
- `anchors.py`: `link_question`, and the readings a value's neighbouring words settle.
"""
