"""Ground a placeholder (label, description, kind) to KB ids: hybrid lexical + vector, priors, KB context."""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

import numpy as np

from grounding.build import INDEX_FORMAT, build_index, index_dir, open_memory, read_meta
from grounding.candidates import Candidate, Correction, GroundingResult
from grounding.context import RawContext, StoreOnFirstUse, check_context, confirmed_ids
from grounding.embedder import Embedder, canonical_name, get_embedder, query_text
from grounding.lexical_index import LexicalHit, LexicalIndex
from grounding.text import best_similarity, normalize
from grounding.vector_stores import open_vectors
from kb_dumps.label_memory import LabelRow
from kb_dumps.layout import StoreLayout
from kb_dumps.profiles import KINDS, KBProfile, WikidataProfile, detect_profile, get_profile
from kb_dumps.stage_errors import KBQAError, echo
from kb_dumps.store_types import Store

log = logging.getLogger(__name__)

# Final score below which the answer is "no grounding" (setting; see Grounder(threshold=...)).
DEFAULT_THRESHOLD = 0.45
# A guessed URI is kept when its label (or an alias) matches the placeholder label this well.
LABEL_AGREEMENT = 0.8
# Cosine similarities of MiniLM between unrelated short texts sit around 0.1-0.2, same-meaning
# texts above 0.8: map [COS_FLOOR, COS_CEIL] linearly onto [0, 1].
COS_FLOOR, COS_CEIL = 0.2, 0.9
# Popularity and context are priors: they scale the text score instead of adding to it, so that
# they re-order close candidates but never lift a poor text match over the threshold.
# A description is explicit disambiguation, so popularity counts less when one is given.
POPULARITY_WEIGHT, POPULARITY_WEIGHT_WITH_DESCRIPTION, CONTEXT_WEIGHT = 0.15, 0.08, 0.25
MAX_ALIASES_SCORED = 30

# A keyword of `Grounder(...)` passed through `get_grounder`.
GrounderOption = float | str | bool | KBProfile | Embedder | Store | None


def _weights(has_label: bool, has_description: bool) -> tuple[float, float]:
    """(lexical, vector) weights: a description is only visible to the vector signal."""
    if not has_label:
        return 0.0, 1.0
    return (0.45, 0.55) if has_description else (0.7, 0.3)


def check_index_embedder(store_dir: Path, meta: dict, model: str | None, embedder: Embedder | None) -> None:
    """Refuse an index that this process cannot query: vectors of another embedder (or another version of
    it) are not comparable, and searching them would give plausible but wrong candidates silently."""
    store = str(store_dir)
    if meta.get("format") != INDEX_FORMAT or not meta.get("embedder"):
        raise KBQAError(f"the grounding index of {store} has an older format ({meta.get('format')}); rebuild it: "
                        f"`kbqa index --store {store} --rebuild`", stage="ground")
    built = str(meta["embedder"])
    wanted = canonical_name(model) if model else (embedder.name if embedder is not None else built)
    if wanted != built:
        raise KBQAError(f"the grounding index of {store} was built with the embedder {built}, not {wanted}; "
                        f"run `kbqa index --store {store} --rebuild --embedder {wanted}` (or use --embedder "
                        f"{built})", stage="ground")
    if embedder is not None and embedder.fingerprint != meta.get("fingerprint"):
        raise KBQAError(f"the grounding index of {store} was built with another version of {built} "
                        f"({meta.get('fingerprint')}, this one is {embedder.fingerprint}); run "
                        f"`kbqa index --store {store} --rebuild`", stage="ground")


class Grounder(StoreOnFirstUse):
    """Grounding over one store's label memory and index (`<store>/index/`, built by `kbqa index`)."""

    def __init__(self, store_dir: str | Path, *, threshold: float = DEFAULT_THRESHOLD,
                 profile: str | KBProfile | None = None, model: str | None = None, build_missing: bool = False,
                 embedder: Embedder | None = None, store: Store | None = None):
        self.store_dir = Path(store_dir)
        meta = read_meta(self.store_dir)
        if meta is None:
            if not build_missing:
                raise KBQAError(f"no grounding index in {index_dir(self.store_dir)}; build it with "
                                f"`kbqa index --store {self.store_dir}`", stage="ground")
            build_index(self.store_dir, model=model)
            meta = read_meta(self.store_dir) or {}
        self.meta = meta
        check_index_embedder(self.store_dir, meta, model, embedder)
        self.model = str(meta["embedder"])  # queries must be embedded by the embedder that built the index
        self.threshold = threshold
        self.memory = open_memory(self.store_dir)
        if self.memory.generation > int(meta.get("generation", 0)):
            log.warning("the grounding index of %s is older than its label memory; run `kbqa index --store %s`",
                        self.store_dir, self.store_dir)
        folder = index_dir(self.store_dir)
        self.lexical = LexicalIndex.load(folder / "lexical")
        # the vector store the index was built with (meta "vector_store"; grounding/vector_stores.py)
        self.vectors = open_vectors(folder, meta)
        self._embedder = embedder
        self.profile = get_profile(profile) if profile else self._profile_from_store()
        self._store = store
        top = self.memory.conn.execute("SELECT MAX(popularity) FROM labels").fetchone()[0]
        self._log_max_pop = float(np.log1p(max(int(top or 0), 1)))

    def _profile_from_store(self) -> KBProfile:
        manifest = StoreLayout.of(self.store_dir).manifest_path
        if manifest.is_file():
            name = json.loads(manifest.read_text(encoding="utf-8")).get("profile")
            if name:
                return get_profile(name)
        sample = [r[0] for r in self.memory.conn.execute("SELECT id FROM labels LIMIT 200")]
        return get_profile(detect_profile(sample))

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            emb = get_embedder(self.model)
            check_index_embedder(self.store_dir, self.meta, None, emb)
            self._embedder = emb
        return self._embedder

    def close(self) -> None:
        if self._store is not None and hasattr(self._store, "close"):
            self._store.close()
        if hasattr(self.vectors, "close"):
            self.vectors.close()
        self.memory.close()

    # ---- grounding ----------------------------------------------------------------------
    def encode_query(self, label: str, description: str | None = None) -> np.ndarray:
        return self.embedder.encode_one(query_text(label, description))

    def search(self, label: str, description: str | None = None, kind: str | None = None, k: int = 10,
               context: RawContext | None = None, query_vector: np.ndarray | None = None) -> GroundingResult:
        """Ranked candidates with calibrated scores, the threshold applied, and a reason when none pass."""
        label = (label or "").strip() if isinstance(label, str) else ""
        description = description.strip() if isinstance(description, str) and description.strip() else None
        if not label and not description:
            raise KBQAError("nothing to ground: the label is empty or whitespace (give the placeholder a label, "
                            "e.g. 'place of birth', or at least a description)", stage="ground")
        if kind is not None and kind not in KINDS:
            raise KBQAError(f"unknown kind {kind!r}; choose one of {', '.join(KINDS)}", stage="ground")
        if k < 1:
            raise KBQAError(f"k must be at least 1 (got {k})", stage="ground")
        ctx = check_context(context) if context else {}
        result = GroundingResult(query=label, description=description, kind=kind, threshold=self.threshold)
        norm = normalize(label)
        pool = max(3 * k, 30)
        lex_hits = {h.rowid: h for h in self.lexical.search(label, pool, kind)} if norm else {}
        vec = query_vector if query_vector is not None else self.encode_query(label, description)
        vec_hits = {h.rowid: h.similarity for h in self.vectors.search(vec, pool, kind)}
        rows = self.memory.by_rowids(list(dict.fromkeys([*lex_hits, *vec_hits])))
        rows = {r: row for r, row in rows.items() if kind is None or row.kind == kind}
        missing_vec = {r: row.kind for r, row in rows.items() if r not in vec_hits}
        vec_sims = {**self.vectors.similarities(vec, missing_vec), **vec_hits}
        w_lex, w_vec = _weights(bool(norm), bool(description))
        cands: list[Candidate] = []
        for rowid, row in rows.items():
            cands.append(self._score(row, norm, lex_hits.get(rowid), vec_sims.get(rowid), w_lex, w_vec,
                                     rowid in lex_hits, rowid in vec_hits))
        cands.sort(key=lambda c: -c.score)
        if ctx and cands:
            confirmed = confirmed_ids(self.store, self.profile, kind, ctx, [c.id for c in cands])
            if confirmed is not None:
                result.context_used = True
                for c in cands:
                    c.signals["context"] = 1.0 if c.id in confirmed else 0.0
                    c.score *= (1 - CONTEXT_WEIGHT) + CONTEXT_WEIGHT * c.signals["context"]
                cands.sort(key=lambda c: -c.score)
        for c in cands:
            c.score = round(min(max(c.score, 0.0), 1.0), 4)
        result.candidates = [c for c in cands if c.score >= self.threshold][:k]
        result.below_threshold = [c for c in cands if c.score < self.threshold][:k]
        if not result.candidates:
            result.reason = self._reason(label, kind, cands)
        return result

    def ground(self, label: str, description: str | None = None, kind: str | None = None, k: int = 10,
               context: RawContext | None = None) -> list[Candidate]:
        """The candidates above the threshold, best first (empty: "no grounding"; see `search` for why)."""
        return self.search(label, description, kind, k, context).candidates

    def _score(self, row: LabelRow, norm: str, lex_hit: LexicalHit | None, cos: float | None, w_lex: float, w_vec: float,
               by_lex: bool, by_vec: bool) -> Candidate:
        if lex_hit is not None:
            lex, matched = lex_hit.score, lex_hit.name
        elif norm:
            lex, matched = best_similarity(norm, row.label, row.aliases[:MAX_ALIASES_SCORED])
        else:
            lex, matched = 0.0, row.label
        vcal = 0.0 if cos is None else float(np.clip((cos - COS_FLOOR) / (COS_CEIL - COS_FLOOR), 0.0, 1.0))
        pop = float(np.log1p(max(row.popularity, 0)) / self._log_max_pop)
        base = w_lex * lex + w_vec * vcal
        w_pop = POPULARITY_WEIGHT if w_vec <= 0.3 else POPULARITY_WEIGHT_WITH_DESCRIPTION
        score = base * ((1 - w_pop) + w_pop * min(pop, 1.0))
        signals = {"popularity": round(pop, 4)}
        if w_lex:
            signals["lexical"] = round(lex, 4)
        if cos is not None:
            signals["vector"] = round(vcal, 4)
        sources = [s for s, on in (("lexical", by_lex), ("vector", by_vec)) if on]
        return Candidate(id=row.id, label=row.label, description=row.description, kind=row.kind, score=score,
                         signals=signals, sources=sources, matched=matched)

    def _reason(self, label: str, kind: str | None, cands: list[Candidate]) -> str:
        what = f"{kind} " if kind else ""
        if not cands:
            return f"no {what}candidate for {echo(label)} in the label memory"
        best = cands[0]
        return (f"no grounding: the best {what}candidate for {echo(label)} is {best.id} ({echo(best.label)}) with score "
                f"{best.score:.2f}, below the threshold {self.threshold:.2f}")

    # ---- URI correction --------------------------------------------------------------------
    def memory_id(self, uri: str) -> str:
        """A guessed URI in the form the label memory keys it (`wdt:P19` -> full `wd:P19` IRI)."""
        iri = self.profile.expand(uri) if not uri.startswith("http") else uri
        if isinstance(self.profile, WikidataProfile):
            iri = self.profile.property_entity(iri)
        return iri

    def correct(self, guessed_uri: str | None, label: str, description: str | None = None,
                kind: str | None = None, context: RawContext | None = None) -> Correction:
        """Keep a guessed URI that the KB knows with a matching label and kind, else the best candidate."""
        guess = (guessed_uri or "").strip() or None
        why = "no URI was guessed"
        if guess:
            try:
                iri = self.memory_id(guess)
            except ValueError as e:
                iri, why = None, f"the guess {guess!r} is not a URI this KB can use ({e})"
            row = self.memory.get(iri) if iri else None
            if iri and row is None:
                why = f"{guess} is not in the label memory"
            elif row is not None:
                norm = normalize(label or "")
                lex, matched = best_similarity(norm, row.label, row.aliases) if norm else (1.0, row.label)
                if kind and row.kind != kind:
                    why = f"{guess} is a {row.kind}, the placeholder needs a {kind}"
                elif lex < LABEL_AGREEMENT:
                    why = f"{echo(guess)} is labelled {echo(row.label)}, which does not match {echo(label)}"
                else:
                    cand = Candidate(id=row.id, label=row.label, description=row.description, kind=row.kind,
                                     score=round(lex, 4), signals={"lexical": round(lex, 4)}, sources=["guess"],
                                     matched=matched)
                    return Correction("kept", row.id, guess, f"{guess} exists with label {row.label!r}", cand)
        if not (label or "").strip() and not (description or "").strip():
            return Correction("none", None, guess, f"{why}; no label to ground instead")
        res = self.search(label, description, kind, k=1, context=context)
        if res.candidates:
            best = res.candidates[0]
            return Correction("replaced", best.id, guess, f"{why}; grounded {label!r} to {best.id}", best)
        return Correction("none", None, guess, f"{why}; {res.reason}")


_GROUNDERS: dict[str, Grounder] = {}
_GROUNDERS_LOCK = threading.Lock()


def get_grounder(store_dir: str | Path, **kw: GrounderOption) -> Grounder:
    """One Grounder per store directory per process (opening one loads the indexes)."""
    key = str(Path(store_dir).resolve())
    with _GROUNDERS_LOCK:
        if key not in _GROUNDERS:
            _GROUNDERS[key] = Grounder(store_dir, **kw)
        return _GROUNDERS[key]


def ground(label: str, description: str | None = None, kind: str | None = None, k: int = 10,
           context: RawContext | None = None, *, store: str | Path) -> list[Candidate]:
    return get_grounder(store).ground(label, description, kind, k, context)


def correct(guessed_uri: str | None, label: str, description: str | None = None, kind: str | None = None, *,
            store: str | Path, context: RawContext | None = None) -> Correction:
    return get_grounder(store).correct(guessed_uri, label, description, kind, context)
