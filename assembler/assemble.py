"""Plan + grounding → checked SPARQL: best-first grounding combinations, executed, empty results diagnosed.

For each placeholder the grounder proposes candidates (a guessed URI first when the KB confirms it);
combinations are written and run best-first, and the first one with answers wins. When every one is
empty, the candidate lists are widened once (execution-driven adaptive grounding) before the query
is reported `empty` with the AC that empties the join. Without a store, the best-scoring combination
is returned after a parse check.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from assembler.answers import Answers, make_answers
from assembler.assembly_records import AssemblyResult, Attempt, PlaceholderGrounding, ReportStep
from assembler.combinations import (
    MemoryGrounder,
    PlaceholderGrounder,
    add_candidates,
    combinations,
    distinct_placeholders,
    ground_placeholder,
    pinned_grounding,
)
from assembler.diagnose import diagnose_empty
from assembler.plan import Query
from assembler.vocabulary import text_properties, vocabulary_candidates
from assembler.writer import write_sparql
from kb_dumps.label_memory import LabelMemory
from kb_dumps.profiles import KBProfile, get_profile
from kb_dumps.stage_errors import ErrorInfo, QueryError, StoreError, echo
from kb_dumps.store_types import Store

if TYPE_CHECKING:
    import pyoxigraph as ox


@dataclass
class AssembleOptions:
    """Bounds of the search; each is a setting, documented here."""

    k: int = 5  # candidates per placeholder in the first round
    widen_k: int = 15  # candidates per placeholder (below-threshold ones included) after an all-empty round
    max_combinations: int = 20  # combinations tried per round
    timeout_s: float = 10.0  # time budget of each query
    row_cap: int = 10_000  # rows kept of each result
    diagnose_timeout_s: float = 5.0  # time budget of each ASK of the empty-result diagnosis
    widen: bool = True  # retry once with wider candidate lists when every combination is empty


_PARSER: ox.Store | None = None


def parse_problem(sparql: str) -> str | None:
    """Why pyoxigraph cannot parse `sparql`, or None. Runs on an empty in-memory store (no data, no network:
    the writer cannot write SERVICE)."""
    global _PARSER
    import pyoxigraph as ox

    if _PARSER is None:
        _PARSER = ox.Store()
    try:
        _PARSER.query(sparql)
    except SyntaxError as e:
        return str(e)
    except UnicodeEncodeError as e:
        return f"the query is not valid Unicode text: {e.reason}"
    return None


class Assembler:
    """Assembles Plans for one KB. `store` has `.query(sparql, timeout_s=, row_cap=)` (a LocalStore) or is
    None; `grounder` has `.search` / `.correct` (a grounding.Grounder, or a MemoryGrounder); `memory`
    labels the answers."""

    def __init__(self, profile: KBProfile | str, *, store: Store | None = None,
                 grounder: PlaceholderGrounder | None = None, memory: LabelMemory | None = None,
                 options: AssembleOptions | None = None):
        self.profile = get_profile(profile)
        self.store = store
        self.memory = memory
        self.grounder = grounder if grounder is not None else MemoryGrounder(memory, self.profile)
        self.options = options or AssembleOptions()

    # ---- grounding ---------------------------------------------------------------------------
    def ground(self, plan: Query, *, widen: bool = False,
               pinned: Mapping[str, str] | None = None) -> list[PlaceholderGrounding]:
        """Each placeholder's candidates, best first; a placeholder in `pinned` (name -> IRI the translator checked
        against this store) gets that IRI alone, without a search."""
        k = self.options.widen_k if widen else self.options.k
        as_text = text_properties(plan)
        out = []
        for ph in distinct_placeholders(plan):
            if pinned and pinned.get(ph.name):
                out.append(pinned_grounding(ph, pinned[ph.name]))
                continue
            pg = ground_placeholder(self.grounder, ph, k, widen=widen)
            if ph.kind == "property":  # the profile's own label / description / alias predicates
                extra = vocabulary_candidates(self.profile, ph, ph.name in as_text)
                if extra:
                    add_candidates(pg, extra)
            out.append(pg)
        return out

    # ---- the whole thing ---------------------------------------------------------------------
    def assemble(self, plan: Query, *, execute: bool = True, pinned: Mapping[str, str] | None = None) -> AssemblyResult:
        """Ground, write, (run,) choose; never raises on a bad Plan or a failing query. `pinned`: placeholders whose
        IRI the translator already confirmed on this store (see `ground`)."""
        out = AssemblyResult()
        t0 = time.perf_counter()
        out.grounding = self.ground(plan, pinned=pinned)
        missing = [g for g in out.grounding if not g.candidates]
        ground_errors = [ErrorInfo("ground", f"[{g.name}] ({g.kind} {echo(g.label)}) has no grounding: {g.reason}",
                                   ac=g.ac) for g in missing]
        out.steps.append(ReportStep("ground", not missing, time.perf_counter() - t0, _ground_detail(out.grounding, self.profile),
                              ground_errors))
        if missing:
            return _fail(out, "ground", ground_errors)
        run = _Run(self, plan, out, execute and self.store is not None)
        chosen = run.search(out.grounding)
        if chosen is None and self.options.widen and run.executed and run.all_empty and not run.store_failed:
            t1 = time.perf_counter()
            widened = self.ground(plan, widen=True, pinned=pinned)
            out.steps.append(ReportStep("ground", True, time.perf_counter() - t1,
                                  "widened after every combination was empty: " + _ground_detail(widened, self.profile)))
            out.grounding = widened
            chosen = run.search(widened)
        run.finish_steps()
        if run.store_failed:
            return _fail(out, "store", run.errors)
        if chosen is not None:
            out.sparql = chosen.sparql
            for g in out.grounding:
                g.chosen = chosen.mapping.get(g.name)
            if not run.executing:
                out.status = "generated"
                return out
            out.answers = run.answers[id(chosen)]
            out.status = "ok"  # problems of combinations tried before it stay in the step report
            return out
        first = run.first_empty
        if first is None:  # nothing written or nothing ran to the end
            stage = "assemble" if not run.written else "execute"
            return _fail(out, stage, run.errors or [ErrorInfo(stage, "no combination could be written")])
        return self._empty(plan, out, first, run)

    def _empty(self, plan: Query, out: AssemblyResult, first: Attempt, run: _Run) -> AssemblyResult:
        t0 = time.perf_counter()
        out.sparql = first.sparql
        out.answers = run.answers[id(first)]
        for g in out.grounding:
            g.chosen = first.mapping.get(g.name)

        def ask(sparql: str) -> bool | None:
            res = self.store.query(sparql, timeout_s=self.options.diagnose_timeout_s, row_cap=1)
            return bool(res.boolean) if res.kind == "ask" else bool(res.rows)

        out.diagnosis = diagnose_empty(plan, self.profile, first.mapping, ask)
        err = ErrorInfo("empty", out.diagnosis.message, ac=out.diagnosis.ac)
        out.steps.append(ReportStep("empty", False, time.perf_counter() - t0,
                              f"{len(run.attempts_executed)} combinations returned no answer", [err]))
        out.status, out.failed_stage = "empty", "empty"
        out.errors = [err]
        return out


class _Run:
    """State of one assembly's search: attempts, answers, errors, timings."""

    def __init__(self, asm: Assembler, plan: Query, out: AssemblyResult, executing: bool):
        self.asm, self.plan, self.out, self.executing = asm, plan, out, executing
        self.tried: set[tuple] = set()
        self.answers: dict[int, Answers] = {}
        self.errors: list[ErrorInfo] = []
        self.write_s = self.exec_s = 0.0
        self.written = 0
        self.store_failed = False
        self.first_empty: Attempt | None = None

    @property
    def attempts_executed(self) -> list[Attempt]:
        return [a for a in self.out.attempts if a.outcome in ("answers", "empty")]

    @property
    def executed(self) -> bool:
        return bool(self.attempts_executed)

    @property
    def all_empty(self) -> bool:
        return all(a.outcome != "answers" for a in self.out.attempts)

    def _error(self, err: ErrorInfo) -> None:
        if all((e.message, e.ac) != (err.message, err.ac) for e in self.errors):
            self.errors.append(err)

    def search(self, grounding: list[PlaceholderGrounding]) -> Attempt | None:
        lists = [g.candidates for g in grounding]
        opts = self.asm.options
        for score, idx in combinations(lists, opts.max_combinations + len(self.tried)):
            mapping = {g.name: g.candidates[i].id for g, i in zip(grounding, idx, strict=True)}
            key = tuple(sorted(mapping.items()))
            if key in self.tried:
                continue
            self.tried.add(key)
            attempt = Attempt(mapping, round(score, 6))
            self.out.attempts.append(attempt)
            if self._try(attempt):
                return attempt
            if self.store_failed or len(self.out.attempts) >= 2 * opts.max_combinations:
                return None
        return None

    def _try(self, attempt: Attempt) -> bool:
        t0 = time.perf_counter()
        written = write_sparql(self.plan, self.asm.profile, attempt.mapping)
        self.write_s += time.perf_counter() - t0
        if not written.ok:
            attempt.outcome, attempt.message = "error", "; ".join(e.message for e in written.errors)[:500]
            for e in written.errors:
                self._error(e)
            return False
        attempt.sparql = written.sparql
        self.written += 1
        if not self.executing:
            t0 = time.perf_counter()
            problem = parse_problem(written.sparql)  # type: ignore[arg-type]
            self.write_s += time.perf_counter() - t0
            if problem:
                attempt.outcome, attempt.message = "error", problem[:500]
                self._error(ErrorInfo("assemble", f"the written query does not parse: {problem[:300]}"))
                return False
            attempt.outcome = "written"
            return True
        return self._execute(attempt)

    def _execute(self, attempt: Attempt) -> bool:
        opts = self.asm.options
        t0 = time.perf_counter()
        try:
            res = self.asm.store.query(attempt.sparql, timeout_s=opts.timeout_s, row_cap=opts.row_cap)
        except StoreError as e:
            attempt.outcome, attempt.message = "error", e.info.message
            self.store_failed = True
            self._error(ErrorInfo("store", e.info.message))
            return False
        except QueryError as e:
            attempt.outcome = "timeout" if e.timed_out else "error"
            attempt.message = e.info.message
            self.out.timed_out |= e.timed_out
            self._error(ErrorInfo("execute", e.info.message))
            return False
        finally:
            attempt.seconds = round(time.perf_counter() - t0, 6)
            self.exec_s += attempt.seconds
        answers = make_answers(res, self.asm.memory, self.asm.profile)
        self.answers[id(attempt)] = answers
        attempt.rows = len(answers.rows) if answers.kind == "select" else 1
        if answers.empty:
            attempt.outcome = "empty"
            self.first_empty = self.first_empty or attempt
            return False
        attempt.outcome = "answers"
        return True

    def finish_steps(self) -> None:
        attempts = self.out.attempts
        write_errors = [e for e in self.errors if e.stage == "assemble"]
        self.out.steps.append(ReportStep("assemble", self.written > 0, self.write_s,
                                   f"{self.written} of {len(attempts)} combinations written"
                                   + ("" if self.executing else " and parsed"), write_errors))
        if self.executing:
            counts = {o: sum(a.outcome == o for a in attempts) for o in ("answers", "empty", "timeout", "error")}
            detail = ", ".join(f"{n} {o}" for o, n in counts.items() if n)
            exec_errors = [e for e in self.errors if e.stage in ("execute", "store")]
            self.out.steps.append(ReportStep("execute", counts["answers"] > 0 or counts["empty"] > 0, self.exec_s,
                                       f"{len(attempts)} combinations run: {detail}", exec_errors))


def _ground_detail(grounding: list[PlaceholderGrounding], profile: KBProfile) -> str:
    parts = []
    for g in grounding:
        if g.candidates:
            c = g.candidates[0]
            parts.append(f"[{g.name}] → {profile.compact(c.id)} ({c.score:.2f}, {len(g.candidates)} candidates)")
        else:
            parts.append(f"[{g.name}] → none")
    return "; ".join(parts) if parts else "no placeholders"


def _fail(out: AssemblyResult, stage: str, errors: list[ErrorInfo]) -> AssemblyResult:
    out.status, out.failed_stage = "error", stage
    out.errors = list(errors)
    return out
