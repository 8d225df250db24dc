"""Checks shared by the metric tests (tests/test_query_metrics.py, tests/test_answer_metrics.py)."""

from __future__ import annotations

import pytest

from eval.query_metrics import PRF


def close(prf: PRF, p: float, r: float, f: float) -> None:
    """Precision, recall and F1 of `prf` are (p, r, f), up to float rounding."""
    assert (prf.precision, prf.recall, prf.f1) == pytest.approx((p, r, f))
