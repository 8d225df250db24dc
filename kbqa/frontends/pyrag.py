"""PyRAG front-end: a small Python program over KB primitives, read with `ast` and lowered statically. Never run.

The program's subset and primitives are described in `pyrag_program.py` (the program tree and its reader);
`pyrag_lower.py` lowers a read program to one Plan. This module is the front-end's entry: `parse_pyrag` and the
`pyrag` entry of `kbqa.frontends.FRONTENDS`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kbqa.frontends.pyrag_lower import PyragResult, lower_program
from kbqa.frontends.pyrag_program import read_program
from kbqa.settings import RequestCaps

if TYPE_CHECKING:
    from kb_dumps.profiles import KBProfile
    from kbqa.frontends.qcompiler import LeafRepair, LeafTranslate
    from kbqa.pipeline import Engine

__all__ = ["parse_pyrag", "read_program", "frontend"]


def parse_pyrag(text: str, translate_leaf: LeafTranslate | None = None, *,
                profile: str | KBProfile = "wikidata", repair: LeafRepair | None = None,
                repair_rounds: int = 2, caps: RequestCaps | None = None) -> PyragResult:
    """Read, check and lower a program to one Plan (`PyragResult`: plan, errors, program, sub-questions).
    `translate_leaf` (question -> DeSQ) serves `ask_kb`; `profile` names the instance-of property. Never
    raises, never executes the program."""
    return lower_program(text, translate_leaf, profile=profile, repair=repair, repair_rounds=repair_rounds,
                         caps=caps)


def frontend(engine: Engine) -> Callable[[str], PyragResult]:
    """The `pyrag` entry of `kbqa.frontends.FRONTENDS`: `ask_kb` sub-questions go to the engine's translator."""
    from kbqa.frontends.qcompiler import leaf_repairer, leaf_translator

    tr, rounds = engine.leaf_translator(), engine.repair_rounds
    leaf = leaf_translator(tr) if tr is not None else None
    repair = leaf_repairer(tr) if tr is not None else None
    return lambda text: parse_pyrag(text, leaf, profile=engine.profile, repair=repair, repair_rounds=rounds,
                                    caps=engine.caps)
