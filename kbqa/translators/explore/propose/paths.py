"""Join paths of the `explore` search: how instances of one class reach another class or a predicate's subject
through IRI-valued predicates of the schema memory (both directions), shortest first."""

from __future__ import annotations

from grounding.schema import SchemaMemory
from kbqa.translators.explore.query import Path, Step

MAX_JOINS = 2


class SchemaPaths:
    """Join paths between classes through IRI-valued predicates (both directions), shortest first."""

    def __init__(self, schema: SchemaMemory):
        self.schema = schema
        self.edges: dict[str, list[tuple[Step, str]]] = {}
        for p, info in schema.predicates.items():
            if not info.ranges:
                continue
            for d in info.domains:
                for r in info.ranges:
                    self.edges.setdefault(d, []).append((Step(p, True), r))
                    self.edges.setdefault(r, []).append((Step(p, False), d))

    def to_class(self, start: str, goal: str, max_joins: int = MAX_JOINS) -> list[Path]:
        if start == goal:
            return [()]
        out: list[Path] = []
        frontier: list[tuple[str, Path]] = [(start, ())]
        for _ in range(max_joins):
            nxt = []
            for cls, path in frontier:
                for step, other in self.edges.get(cls, []):
                    if any(s.pred == step.pred for s in path):
                        continue
                    np_ = path + (step,)
                    if other == goal:
                        out.append(np_)
                    nxt.append((other, np_))
            if out:
                return out
            frontier = nxt[:200]
        return out

    def to_predicate(self, start: str, pred: str, max_joins: int = MAX_JOINS) -> list[Path]:
        """Paths from instances of `start` to the subject of `pred`, ending with `pred` itself (forward)."""
        info = self.schema.predicates.get(pred)
        if info is None:
            return []
        if start in info.domains or not info.domains:
            return [(Step(pred, True),)]
        paths: list[Path] = []
        for d in info.domains:
            for p in self.to_class(start, d, max_joins):
                paths.append(p + (Step(pred, True),))
        paths.sort(key=len)
        return paths[:4]
