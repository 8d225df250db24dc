"""A candidate's features read against the other candidates of its question: `d:<name>` is the candidate's value
of `<name>` less the largest value among the question's candidates (0 for the best, negative below it).

Trees split on absolute thresholds, but how well a candidate matches the question is relative: a similarity of
0.6 is the best reading of one question and a poor one of another. The differences let the ranker ask "is this
the best match among the readings" directly. Computed wherever a list of candidates is scored (the ranker's
`score_dicts`, and the fit's `iter_groups`), from the base features only, so computing them twice gives the same.
"""

from __future__ import annotations

# the graded features a question's candidates differ in (flags and counts of the structure are left absolute)
RELATIVE: tuple[str, ...] = (
    "coverage", "cond_score", "focus", "lex_p", "lex_r", "vsim", "name_filter", "struct_prior", "prior_agg",
    "prior_columns", "prior_distinct", "prior_order", "log_rows", "size", "joins", "n_conds",
    "x_ans_share", "x_ans_same", "x_col_share",
)
PREFIX = "d:"


def with_list_features(feats: list[dict[str, float]]) -> list[dict[str, float]]:
    """The same dicts (changed in place and returned) with `d:<name>` for every name of RELATIVE some candidate
    has (a candidate without the feature counts as 0)."""
    for name in RELATIVE:
        values = [f.get(name, 0.0) for f in feats]
        if not any(values):
            continue
        top = max(values)
        for f, v in zip(feats, values, strict=True):
            f[PREFIX + name] = v - top
    return feats
