"""How well a span of the question names a class or predicate of the schema, word by word: the same words,
words of one root, the same words written together, a name that shortens the words (*temp*, *emp fname*, *dob*)
or spells their initials. `words.py`'s `link_schema` takes the best of these per name."""

from __future__ import annotations

from rapidfuzz import fuzz

from kbqa.translators.language import ENGLISH, LanguageProfile


def name_score(span_stems: list[str], name_stems: list[str]) -> float:
    """How well a span names a class or predicate: exact stem match 1.0; a one-word span that ends or starts a
    one-word compound name ("type" / *pettype*, "id" / *stuid*) 0.85; else a fuzzy ratio."""
    if not span_stems or not name_stems:
        return 0.0
    a, b = " ".join(span_stems), " ".join(name_stems)
    if a == b:
        return 1.0
    if len(span_stems) == 1 and len(name_stems) == 1 and len(a) >= 2 and len(b) > len(a) + 2 and \
            (b.endswith(a) or (b.startswith(a) and len(a) >= 4)):
        return 0.85
    if len(span_stems) == 1 and len(name_stems) == 1 and 3 <= len(b) < len(a) - 1 and a.startswith(b):
        return 0.82  # a name that is a prefix of the word: *temp* for "temperature"
    if len(span_stems) != len(name_stems) and "".join(span_stems) == "".join(name_stems):
        return 0.95  # the same words written apart or together: "zip code" / *zipcode*
    if len(span_stems) == len(name_stems) and all(same_root(x, y) for x, y in zip(span_stems, name_stems,
                                                                                    strict=True)):
        return 0.83  # words of one root: "director" / *directed*, "located" / *location*
    return fuzz.ratio(a, b) / 100.0


def same_root(x: str, y: str) -> bool:
    """Two words of one root with different endings: a common start of five letters or more, most of the shorter
    word, and neither word all of it ("planet" is no ending of "plane")."""
    if x == y:
        return True
    n = 0
    for cx, cy in zip(x, y, strict=False):
        if cx != cy:
            break
        n += 1
    return 5 <= n < min(len(x), len(y)) and n >= 0.6 * min(len(x), len(y))


def acronym_score(span_stems: list[str], core: list[str], lang: LanguageProfile = ENGLISH) -> float:
    """A span whose initials are a word of the name: "body mass index" names *has BMI*."""
    if not 2 <= len(span_stems) <= 4 or any(w in lang.function_words for w in span_stems):
        return 0.0
    initials = "".join(w[0] for w in span_stems)
    return 0.9 if initials in core else 0.0


def abbreviates(short: str, word: str) -> bool:
    """`short` is a schema name's shortening of `word`: its first three letters or more (*emp* / "employee",
    *prof* / "professor"), or its first letter and then consonants of it in order (*crs* / "course", *dept* /
    "department", *qty* / "quantity"; a vowel only right after the first letter, so *age* is no "average")."""
    if len(short) < 3 or len(word) < len(short) + 2 or short[0] != word[0]:
        return False
    if word.startswith(short):
        return True
    if any(ch in "aeiou" for ch in short[2:]):
        return False
    rest = iter(word[1:])
    return all(ch in rest for ch in short[1:])


def abbrev_score(span_stems: list[str], name_stems: list[str], function_words: frozenset[str] = frozenset()
                  ) -> float:
    """A span the name spells in short, every word accounted for in order: *fname* / "first name" (initials, then
    the last word whole; 0.92: two words fully explained beat one word inside the name) and *emp id* / "employee
    id", *crs code* / "course code" (a shortened word; 0.84). 0 when no word is shortened or any is left over."""
    # each name word takes one span word or more, and the first ones start alike: most pairs stop here
    if not name_stems or not 0 < len(span_stems) <= 4 or len(span_stems) < len(name_stems) or \
            span_stems[0][:1] != name_stems[0][:1]:
        return 0.0

    def best(i: int, j: int) -> float:  # the score of explaining span_stems[i:] by name_stems[j:]; -1 for none
        if i == len(span_stems) and j == len(name_stems):
            return 1.0
        if i == len(span_stems) or j == len(name_stems):
            return -1.0
        n, out = name_stems[j], -1.0
        if n == span_stems[i] or same_root(n, span_stems[i]):
            out = max(out, best(i + 1, j + 1))
        if abbreviates(n, span_stems[i]):
            out = max(out, min(0.84, best(i + 1, j + 1)))
        for t in range(2, len(span_stems) - i + 1):  # initials of t-1 words, then the t-th word whole
            words = span_stems[i:i + t]
            if n == "".join(w[0] for w in words[:-1]) + words[-1]:
                out = max(out, min(0.92, best(i + t, j + 1)))
            elif t >= 3 and n == "".join(w[0] for w in words) and words[0] not in function_words and \
                    words[-1] not in function_words:  # *dob* / "date of birth", not *eat* / "every ant there"
                out = max(out, min(0.9, best(i + t, j + 1)))
        return out

    sc = best(0, 0)
    return sc if 0.0 < sc < 1.0 else 0.0
