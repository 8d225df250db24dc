"""The propose stage: candidate query graphs around the anchors (`search.propose`).

- `search.py`: `Search`, the families (one hop from an entity, class + constraints, two items compared) and
  `propose`, which collects each candidate once;
- `base.py`: what the families share: `Probe` (store probes within the deadline), `Shape`, `coverage`;
- `shapes.py`: the shapes cue words read (count, aggregate, group-by, order, comparison, negation, ASK);
- `ungated.py`: every shape the schema allows around the linked attributes, whatever the cue words;
- `conjunctions.py`: constraints the or-word and the and-word join (`in`, `either`, `any`, `apart`);
- `shared.py`: a value two items share, rewritten from a candidate whose constraints exclude each other;
- `substrings.py`: a piece of text inside an attribute's values (`contains`, `starts`, `ends`);
- `pairs.py`: percentages and count comparisons of two parts; `groups.py`: property-group families;
- `paths.py`: join paths between classes; `display.py`: each class's display column.
"""
