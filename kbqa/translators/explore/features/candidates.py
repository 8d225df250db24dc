"""The features of `explore`'s candidates that need more than the graph itself: similarity of the question to
each one-hop predicate (`rel_sim`) and to each candidate's verbalisation (`vsim`), lexical overlap with the
graph's labels (`lex_p` / `lex_r`), how its answer columns line up with the attributes the question names
(`p_*`, features/projection.py), the words next to each part the candidate uses (`rw:*`, `ra:*`, `r_*`,
features/roles.py), which linked values and attributes its classes use or hold (`lv_*`, `la_*`,
features/link_use.py), and the case bank's second opinions — which predicate and direction the nearest solved
questions use (`case_vote`) and which entity the `cases` translator would fill (`case_entity`).
The structural features are set where the candidates are built (propose/), the structure prior in
features/prior.py, the graph's structure and the question's words in features/structure.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from kb_dumps.stage_errors import KBQAError
from kbqa.translators.explore.context import ExploreContext
from kbqa.translators.explore.features.link_use import add_link_use_features
from kbqa.translators.explore.features.projection import add_projection_features
from kbqa.translators.explore.features.roles import add_role_features
from kbqa.translators.explore.link.anchors import Anchors
from kbqa.translators.explore.lower.text import verbalise
from kbqa.translators.explore.query import Graph

if TYPE_CHECKING:
    import numpy as np

    from grounding.embedder import Embedder


class CandidateFeatures:
    """Computes the features above for one store's candidates (caches the embedder and predicate vectors)."""

    def __init__(self, ctx: ExploreContext):
        self.ctx = ctx
        self._embedder: Embedder | Literal[False] | None = None  # None: not loaded yet; False: none loads
        self._pred_vecs: dict[str, np.ndarray] = {}

    def add(self, question: str, a: Anchors, graphs: list[Graph]) -> None:
        """Every feature of this module, on every candidate."""
        self.relation_similarity(question, a, graphs)
        self.case_vote(question, a, graphs)
        self.case_entity(question, a, graphs)
        self.graph_similarity(question, graphs)
        add_projection_features(self.ctx.schema, a, graphs)
        add_role_features(a, graphs)
        add_link_use_features(self.ctx.schema, a, graphs)

    def relation_similarity(self, question: str, a: Anchors, graphs: list[Graph]) -> None:
        """`rel_sim` of one-hop candidates: cosine of the question without the entity's words and the
        predicate's label and description, with the store's grounding embedder (none: the feature stays 0)."""
        x = self.ctx
        hops = [g for g in graphs if g.family == "hop"]
        if not hops:
            return
        emb = self.text_embedder()
        if not emb:
            return
        import numpy as np

        from kbqa.translators.mentions import mask

        masked_vecs: dict[str, np.ndarray] = {}  # the question without the candidate's own anchor words
        todo = [p for p in {g.conds[0].path[0].pred for g in hops} if p not in self._pred_vecs]
        if todo:
            rows = x.memory.get_many([x.profile.property_entity(p) for p in todo])
            texts = []
            for p in todo:
                row = rows.get(x.profile.property_entity(p))
                info = x.schema.predicates.get(p)
                label = row.label if row is not None else (info.label if info else p)
                texts.append(f"{label}: {row.description}" if row is not None and row.description else label)
            for p, v in zip(todo, emb.encode(texts, progress=False), strict=True):
                self._pred_vecs[p] = v
        for g in hops:
            cond = g.conds[0]
            span = next((lk.span for lk in a.entities if cond.value and lk.iri == cond.value.value), None)
            masked = mask(question, [span] if span else [], "something")
            if masked not in masked_vecs:
                masked_vecs[masked] = emb.encode_one(masked)
            g.features["rel_sim"] = float(np.dot(masked_vecs[masked], self._pred_vecs[cond.path[0].pred]))

    def text_embedder(self) -> Embedder | Literal[False]:
        """The embedder of the store's grounding index (process-wide, shared with the grounder), else the
        default one; False when none loads (the similarity features then stay 0)."""
        x = self.ctx
        if self._embedder is None:
            try:
                from grounding.build import read_meta
                from grounding.embedder import get_embedder

                meta = read_meta(x.store_dir) or {}
                self._embedder = get_embedder(meta.get("embedder") or meta.get("model"))
            except Exception:  # noqa: BLE001 - no embedder at all: lexical features only
                self._embedder = False
        return self._embedder

    def graph_similarity(self, question: str, graphs: list[Graph]) -> None:
        """`vsim`: cosine of the question and each candidate's verbalisation; `lex_p` / `lex_r`: the share of
        the graph's own words (class and predicate labels) that the question uses, and of the question's
        content words the graph's labels cover."""
        x = self.ctx
        if not graphs:
            return
        lang = x.language
        q_words = {w for w in lang.stems(question) if w not in lang.function_words}
        texts = []
        for g in graphs:
            words = set()
            for c in ([g.focus_class] if g.focus_class else []):
                words |= set(lang.stems(x.schema.class_label(c)))
            for path in [c.path for c in g.flat_conds()] + list(g.answer) + [p for _, p in g.aggs if p] + \
                    ([g.order[0]] if g.order and g.order[0] else []):
                for step in path:
                    info = x.schema.predicates.get(step.pred)
                    words |= set(lang.stems(info.label if info else ""))
            words -= lang.function_words
            g.features["lex_p"] = len(words & q_words) / len(words) if words else 0.0
            g.features["lex_r"] = len(words & q_words) / len(q_words) if q_words else 0.0
            texts.append(verbalise(g, x.schema))
        emb = self.text_embedder()
        if not emb:
            return
        import numpy as np

        vecs = emb.encode([question] + texts, progress=False)
        sims = vecs[1:] @ vecs[0]
        for g, sim in zip(graphs, np.asarray(sims).tolist(), strict=True):
            g.features["vsim"] = float(sim)

    def case_entity(self, question: str, a: Anchors, graphs: list[Graph]) -> None:
        """`case_entity` of one-hop candidates: whether the `cases` translator (same bank, same exclusions) fills
        its entity slot with this candidate's anchor — its mention prior and (entity, property) KB check make
        a second opinion on which of several same-label items the question means."""
        x = self.ctx
        hops = [g for g in graphs if g.family == "hop"]
        if not hops or not x.cases.usable():
            return
        try:  # as for case_vote: never its own answer
            fills = x.cases.translate_with_cases(question).details.get("fills") or {}
        except KBQAError:  # cases has no structure for it: no second opinion
            return
        chosen = {x.profile.expand(f["uri"]) for f in fills.values() if f.get("uri")}
        for g in hops:
            value = g.conds[0].value
            g.features["case_entity"] = 1.0 if value is not None and value.value in chosen else 0.0

    def case_vote(self, question: str, a: Anchors, graphs: list[Graph]) -> None:
        """`case_vote` of one-hop candidates: how strongly the nearest solved questions of the store's case bank
        (when it has one) use the same predicate in the same direction — learned from training questions of
        this kind, never from the question itself."""
        x = self.ctx
        hops = [g for g in graphs if g.family == "hop"]
        if not hops:
            return
        if not x.cases.usable():
            return
        from kbqa.translators.mentions import mask

        # votes per masked question: each candidate masks its own anchor's words, so the nearest cases are
        # questions shaped like this one around *that* entity ("where was [X] born" for "kyle rossiter")
        by_mask: dict[str, dict[tuple[str, str], float]] = {}
        for g in hops:
            cond = g.conds[0]
            span = next((lk.span for lk in a.entities if lk.iri == cond.value.value), None) if cond.value else None
            masked = mask(question, [span] if span else [], "something")
            if masked not in by_mask:
                votes: dict[tuple[str, str], float] = {}
                # the question itself never votes (a training question is in the bank that scores it)
                for h in x.cases.nearest(masked, question, k=10):
                    for chk in h.case.checks:
                        key = (x.profile.expand(chk.property), chk.position)
                        votes[key] = max(votes.get(key, 0.0), h.similarity)
                by_mask[masked] = votes
            step = cond.path[0]
            g.features["case_vote"] = by_mask[masked].get((step.pred, "subject" if not step.forward else "object"),
                                                          0.0)
