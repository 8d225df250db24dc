"""The SPARQL queries `kbqa ingest --endpoint` pages through, as templates a KB profile may override.

Each paged query binds `?key`, orders by `STR(?key)` and takes rows after `{{after}}` (keyset paging:
a rerun resumes after the last key it stored, and no page costs an OFFSET scan). Together the
phases write what a dump ingestion writes (kb_dumps/README.md "Label memory"):

  texts       labels, aliases, descriptions (literal objects of the profile's text predicates)
  predicates  every predicate with its number of uses: properties, and their popularity
  classes     objects of instance-of, both ends of subclass-of
  typed       subjects typed with the profile's property / class types
  ids         every IRI subject or object (profiles that label ids from their local names, or --all-ids),
              per group of predicates from the predicates phase (`{{predicates}}`, a VALUES list): a group's
              ids fit one unsorted page (`ids`); one that does not, keyset-paged (`ids_sorted`)
              (kb_dumps/endpoint_ids.py)
  popularity  per batch of label-memory ids (`{{ids}}`): statements with the id as subject or object

Placeholders (`{{name}}`, filled with escaped values only): after, limit, text_predicates (a VALUES
list), text_predicate_list (an IN list), lang_filter (on ?o), type_predicate, subclass_predicate,
kind_types (a VALUES list), predicates (a VALUES list), ids (a VALUES list). A variant named `<phase>_<dialect>` (e.g.
`popularity_wdqs`: sitelinks) replaces a phase on endpoints of that dialect.
"""

from __future__ import annotations

import re

from kb_dumps.profiles import KBProfile
from kb_dumps.sparql_text import LANG_TAG, escape_string, iri

PHASES = ("texts", "predicates", "classes", "typed", "ids", "popularity")

_TEXT_EXCLUDED = "!(isLiteral(?o) && ?p IN ({{text_predicate_list}}))"

DEFAULT_QUERIES: dict[str, str] = {
    "texts": """SELECT ?key ?p ?o WHERE {
  VALUES ?p { {{text_predicates}} }
  ?key ?p ?o .
  FILTER(isIRI(?key) && isLiteral(?o))
  FILTER({{lang_filter}})
  FILTER(STR(?key) > {{after}})
} ORDER BY STR(?key) STR(?p) LANG(?o) STR(?o) LIMIT {{limit}}""",
    "predicates": """SELECT ?key (COUNT(*) AS ?n) WHERE {
  ?s ?key ?o .
  FILTER(isIRI(?s))
  FILTER(!(isLiteral(?o) && ?key IN ({{text_predicate_list}})))
  FILTER(STR(?key) > {{after}})
} GROUP BY ?key ORDER BY STR(?key) LIMIT {{limit}}""",
    "classes": """SELECT DISTINCT ?key WHERE {
  { ?x {{type_predicate}} ?key FILTER(isIRI(?x)) }
  UNION { ?x {{subclass_predicate}} ?key FILTER(isIRI(?x)) }
  UNION { ?key {{subclass_predicate}} ?x FILTER(isIRI(?x)) }
  FILTER(isIRI(?key))
  FILTER(STR(?key) > {{after}})
} ORDER BY STR(?key) LIMIT {{limit}}""",
    "typed": """SELECT DISTINCT ?key ?t WHERE {
  VALUES ?t { {{kind_types}} }
  ?key {{type_predicate}} ?t .
  FILTER(isIRI(?key))
  FILTER(STR(?key) > {{after}})
} ORDER BY STR(?key) STR(?t) LIMIT {{limit}}""",
    # one unsorted page per group of predicates: sorting costs Oxigraph ~0.5 ms a row (it decodes every IRI it
    # compares), 5x the query itself; `ids_sorted` pages a group whose ids do not fit one page
    "ids": """SELECT DISTINCT ?key WHERE {
  { VALUES ?p { {{predicates}} } ?key ?p ?o FILTER(isIRI(?key) && """ + _TEXT_EXCLUDED + """) }
  UNION { VALUES ?p { {{predicates}} } ?s ?p ?key FILTER(isIRI(?s) && isIRI(?key)) }
} LIMIT {{limit}}""",
    "ids_sorted": """SELECT DISTINCT ?key WHERE {
  { VALUES ?p { {{predicates}} } ?key ?p ?o FILTER(isIRI(?key) && """ + _TEXT_EXCLUDED + """) }
  UNION { VALUES ?p { {{predicates}} } ?s ?p ?key FILTER(isIRI(?s) && isIRI(?key)) }
  FILTER(STR(?key) > {{after}})
} ORDER BY STR(?key) LIMIT {{limit}}""",
    "popularity": """SELECT ?id (COUNT(*) AS ?n) WHERE {
  VALUES ?id { {{ids}} }
  { ?id ?p ?o FILTER(""" + _TEXT_EXCLUDED + """) }
  UNION { ?x ?p ?id FILTER(isIRI(?x)) }
} GROUP BY ?id""",
}

_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


def queries_for(profile: KBProfile) -> dict[str, str]:
    """The default templates with the profile's overrides (class-level or from its JSON file)."""
    return {**DEFAULT_QUERIES, **getattr(profile, "endpoint_queries", {})}


def template(queries: dict[str, str], phase: str, dialect: str) -> str:
    return queries.get(f"{phase}_{dialect}") or queries[phase]


def profile_values(profile: KBProfile, languages: tuple[str, ...]) -> dict[str, str]:
    """The placeholders a profile fills (IRIs checked, language tags checked)."""
    text = [*profile.label_predicates, *profile.description_predicates, *profile.alias_predicates]
    for lang in languages:
        if not LANG_TAG.fullmatch(lang):
            raise ValueError(f"not a language tag: {lang!r}")
    langs = " || ".join(f"langMatches(lang(?o), {escape_string(lang)})" for lang in languages)
    kinds = [*profile.property_types, *profile.class_types]
    return {
        "text_predicates": " ".join(iri(p) for p in text),
        "text_predicate_list": ", ".join(iri(p) for p in text),
        "lang_filter": 'lang(?o) = ""' + (f" || {langs}" if langs else ""),
        "type_predicate": iri(profile.type_predicate),
        "subclass_predicate": iri(profile.subclass_predicate),
        "kind_types": " ".join(iri(t) for t in kinds),
    }


def render(text: str, values: dict[str, str]) -> str:
    """Fill `{{name}}` placeholders; an unknown one is an error (a typo in an override would otherwise
    send a query that silently matches nothing)."""
    def fill(m: re.Match[str]) -> str:
        if m.group(1) not in values:
            raise ValueError(f"unknown placeholder {{{{{m.group(1)}}}}} in an endpoint query; known: "
                             f"{', '.join(sorted(values))}")
        return values[m.group(1)]

    return _PLACEHOLDER.sub(fill, text)
