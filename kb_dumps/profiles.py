"""KB profiles: what differs between knowledge graphs, as small classes with class-level settings.

Ingestion, grounding, decompose and the assembler ask the profile; a new KB is a new profile
(or a `generic` profile with overrides from a small JSON file), never a branch in the code.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import ClassVar

from kb_dumps.stage_errors import KBQAError

RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
OWL = "http://www.w3.org/2002/07/owl#"
SKOS = "http://www.w3.org/2004/02/skos/core#"
SCHEMA = "http://schema.org/"
XSD = "http://www.w3.org/2001/XMLSchema#"

WIKIDATA_PREFIXES: dict[str, str] = {
    "wd": "http://www.wikidata.org/entity/",
    "wdt": "http://www.wikidata.org/prop/direct/",
    "p": "http://www.wikidata.org/prop/",
    "ps": "http://www.wikidata.org/prop/statement/",
    "pq": "http://www.wikidata.org/prop/qualifier/",
    "psv": "http://www.wikidata.org/prop/statement/value/",
    "pqv": "http://www.wikidata.org/prop/qualifier/value/",
    "wikibase": "http://wikiba.se/ontology#",
    "wds": "http://www.wikidata.org/entity/statement/",
    "rdfs": RDFS,
    "rdf": RDF,
    "schema": SCHEMA,
    "skos": SKOS,
    "xsd": XSD,
    "owl": OWL,
}

DBPEDIA_PREFIXES: dict[str, str] = {
    "dbr": "http://dbpedia.org/resource/",
    "dbo": "http://dbpedia.org/ontology/",
    "dbp": "http://dbpedia.org/property/",
    "dbc": "http://dbpedia.org/resource/Category:",
    "foaf": "http://xmlns.com/foaf/0.1/",
    "dct": "http://purl.org/dc/terms/",
    "rdfs": RDFS,
    "rdf": RDF,
    "owl": OWL,
    "skos": SKOS,
    "xsd": XSD,
}

KINDS = ("entity", "property", "class")


class KBProfile:
    """Base profile: the `generic` RDF KG (rdfs:label, rdfs:comment, rdf:type)."""

    name: ClassVar[str] = "generic"
    # Prefixes declared in assembled queries and used to compact IRIs for display.
    prefixes: ClassVar[dict[str, str]] = {"rdf": RDF, "rdfs": RDFS, "owl": OWL, "skos": SKOS, "xsd": XSD}
    # Predicates whose literal object is a label / description / alias of the subject.
    label_predicates: ClassVar[tuple[str, ...]] = (RDFS + "label", SKOS + "prefLabel")
    description_predicates: ClassVar[tuple[str, ...]] = (RDFS + "comment",)
    alias_predicates: ClassVar[tuple[str, ...]] = (SKOS + "altLabel",)
    # instance-of and subclass-of: their objects are classes in the label memory.
    type_predicate: ClassVar[str] = RDF + "type"
    subclass_predicate: ClassVar[str] = RDFS + "subClassOf"
    # Types that declare a subject to be a property or a class.
    property_types: ClassVar[tuple[str, ...]] = (
        RDF + "Property",
        OWL + "ObjectProperty",
        OWL + "DatatypeProperty",
        OWL + "AnnotationProperty",
    )
    class_types: ClassVar[tuple[str, ...]] = (OWL + "Class", RDFS + "Class")
    # Whether the KB has reified statements with p:/ps:/pq: roles (Wikidata qualifiers).
    has_statement_roles: ClassVar[bool] = False
    # Role prefix -> namespace of that role's property IRIs; "" is the direct property.
    role_namespaces: ClassVar[dict[str, str]] = {}
    # Namespace of entity / property IRIs, when the KB has one (used to compact ids).
    entity_namespace: ClassVar[str | None] = None
    property_namespace: ClassVar[str | None] = None
    # Ids with no label get one from their IRI's local name (`#chaoticGood` -> "chaotic good"):
    # many small KBs (BESTIARY) have no rdfs:label at all. Off where ids are opaque (Q42, m.0abc).
    labels_from_local_names: ClassVar[bool] = True
    # `kbqa ingest --endpoint`: query templates replacing those of kb_dumps/endpoint_queries.py, by
    # phase (`texts`, `popularity`, …) or by phase and endpoint dialect (`popularity_wdqs`).
    endpoint_queries: ClassVar[dict[str, str]] = {}

    # ---- identifiers -------------------------------------------------------------------
    def compact(self, iri: str) -> str:
        """`http://www.wikidata.org/entity/Q42` -> `wd:Q42`; unknown namespaces stay `<iri>`."""
        best = ""
        best_prefix = ""
        for prefix, ns in self.prefixes.items():
            if iri.startswith(ns) and len(ns) > len(best):
                local = iri[len(ns):]
                if re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*", local) and not local.endswith("."):
                    best, best_prefix = ns, prefix
        if best:
            return f"{best_prefix}:{iri[len(best):]}"
        return f"<{iri}>"

    def expand(self, name: str) -> str:
        """`wd:Q42` or `<iri>` -> full IRI. Raises ValueError for an unknown prefix."""
        name = name.strip()
        if name.startswith("<") and name.endswith(">"):
            return name[1:-1]
        if ":" in name and not name.startswith("http"):
            prefix, local = name.split(":", 1)
            if prefix in self.prefixes:
                return self.prefixes[prefix] + local
            raise ValueError(f"unknown prefix {prefix!r} in {name!r}")
        return name

    def role_iri(self, property_iri: str, role: str) -> str:
        """The IRI of a property in a statement role (`p`, `ps`, `pq`); role "" is the direct one."""
        if not role:
            return property_iri
        if not self.has_statement_roles:
            raise ValueError(f"the {self.name} profile has no statement roles (got {role}:)")
        local = self.local_property_id(property_iri)
        return self.role_namespaces[role] + local

    def local_property_id(self, property_iri: str) -> str:
        for ns in (self.property_namespace, *self.role_namespaces.values()):
            if ns and property_iri.startswith(ns):
                return property_iri[len(ns):]
        return property_iri

    def canonical_property(self, iri: str) -> tuple[str, str]:
        """Map a predicate IRI to (direct property IRI, role). Non-role predicates map to themselves."""
        # Longest namespace first: p: (prop/) is a prefix of wdt: (prop/direct/) and ps:/pq:.
        for role, ns in sorted(self.role_namespaces.items(), key=lambda kv: -len(kv[1])):
            if iri.startswith(ns) and "/" not in iri[len(ns):]:  # psv:/pqv: (…/value/P…) are not roles
                return (self.property_namespace or "") + iri[len(ns):], role
        return iri, ""

    def kind_hint(self, iri: str) -> str | None:
        """A kind known from the IRI alone (Wikidata P-ids are properties), else None."""
        return None

    def local_name_label(self, iri: str) -> str:
        """A readable label from an IRI's local name: `hasAlignment` -> "has alignment"."""
        local = re.split(r"[#/:]", iri.rstrip("/#"))[-1]
        local = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", local)
        local = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", local)
        return re.sub(r"[_\-\s]+", " ", local).strip().lower()

    def property_entity(self, iri: str) -> str:
        """The label-memory id of a predicate IRI (Wikidata: `wdt:P31`/`p:P31`/… -> `wd:P31`)."""
        return iri

    def direct_property(self, iri: str) -> str:
        """The IRI used in queries for a property's label-memory id (inverse of property_entity)."""
        return iri

    def to_dict(self) -> dict:
        return {"name": self.name, "prefixes": dict(self.prefixes)}


class WikidataProfile(KBProfile):
    name = "wikidata"
    prefixes = WIKIDATA_PREFIXES
    label_predicates = (RDFS + "label",)
    description_predicates = (SCHEMA + "description",)
    alias_predicates = (SKOS + "altLabel",)
    type_predicate = WIKIDATA_PREFIXES["wdt"] + "P31"
    subclass_predicate = WIKIDATA_PREFIXES["wdt"] + "P279"
    property_types = (WIKIDATA_PREFIXES["wikibase"] + "Property",)
    class_types = ()
    has_statement_roles = True
    role_namespaces = {
        "": WIKIDATA_PREFIXES["wdt"],
        "p": WIKIDATA_PREFIXES["p"],
        "ps": WIKIDATA_PREFIXES["ps"],
        "pq": WIKIDATA_PREFIXES["pq"],
    }
    entity_namespace = WIKIDATA_PREFIXES["wd"]
    labels_from_local_names = False
    # Properties are identified by their wd:P… entity IRI in the label memory; wdt:P… in queries.
    property_namespace = WIKIDATA_PREFIXES["wdt"]
    # The Wikidata Query Service answers none of the full scans of the default endpoint queries within
    # its 60 s limit: there popularity is the number of sitelinks, and properties come from directClaim.
    endpoint_queries = {
        "popularity_wdqs": """SELECT ?id ?n WHERE {
  VALUES ?id { {{ids}} }
  ?id <http://wikiba.se/ontology#sitelinks> ?n .
}""",
        "predicates_wdqs": """SELECT ?key (0 AS ?n) WHERE {
  ?property <http://wikiba.se/ontology#directClaim> ?key .
  FILTER(STR(?key) > {{after}})
} ORDER BY STR(?key) LIMIT {{limit}}""",
    }

    def kind_hint(self, iri: str) -> str | None:
        for ns in (WIKIDATA_PREFIXES["wd"], *self.role_namespaces.values()):
            if iri.startswith(ns) and re.fullmatch(r"P\d+", iri[len(ns):]):
                return "property"
        return None

    def property_entity(self, iri: str) -> str:
        """`wdt:P31`/`p:P31`/… -> `wd:P31`, the id under which the label memory keeps a property."""
        direct, _ = self.canonical_property(iri)
        if direct.startswith(WIKIDATA_PREFIXES["wdt"]):
            return WIKIDATA_PREFIXES["wd"] + direct[len(WIKIDATA_PREFIXES["wdt"]):]
        return iri

    def direct_property(self, iri: str) -> str:
        """`wd:P31` -> `wdt:P31` (full IRIs)."""
        if iri.startswith(WIKIDATA_PREFIXES["wd"] + "P"):
            return WIKIDATA_PREFIXES["wdt"] + iri[len(WIKIDATA_PREFIXES["wd"]):]
        return iri


FREEBASE_NS = "http://rdf.freebase.com/ns/"


class FreebaseProfile(KBProfile):
    name = "freebase"
    prefixes = {"ns": FREEBASE_NS, "rdf": RDF, "rdfs": RDFS, "xsd": XSD}
    label_predicates = (FREEBASE_NS + "type.object.name", RDFS + "label")
    description_predicates = (FREEBASE_NS + "common.topic.description",)
    alias_predicates = (FREEBASE_NS + "common.topic.alias",)
    type_predicate = FREEBASE_NS + "type.object.type"
    subclass_predicate = FREEBASE_NS + "freebase.type_hints.included_types"
    property_types = (FREEBASE_NS + "type.property",)
    class_types = (FREEBASE_NS + "type.type",)
    entity_namespace = FREEBASE_NS
    property_namespace = FREEBASE_NS
    labels_from_local_names = False

    def kind_hint(self, iri: str) -> str | None:
        if iri.startswith(FREEBASE_NS):
            local = iri[len(FREEBASE_NS):]
            if re.fullmatch(r"[mg]\.[0-9a-z_]+", local):
                return "entity"
            if local.count(".") >= 2:
                return "property"
            if local.count(".") == 1:
                return "class"
        return None


DBPEDIA_ONTOLOGY = DBPEDIA_PREFIXES["dbo"]


class DBpediaProfile(KBProfile):
    """DBpedia: dbr: resources, dbo: ontology classes and properties, dbp: raw infobox properties."""

    name = "dbpedia"
    prefixes = DBPEDIA_PREFIXES
    label_predicates = (RDFS + "label",)
    description_predicates = (RDFS + "comment",)
    alias_predicates = (DBPEDIA_PREFIXES["foaf"] + "name",)
    entity_namespace = DBPEDIA_PREFIXES["dbr"]
    property_namespace = DBPEDIA_ONTOLOGY
    labels_from_local_names = False

    def kind_hint(self, iri: str) -> str | None:
        if iri.startswith(DBPEDIA_PREFIXES["dbp"]):
            return "property"
        if iri.startswith(DBPEDIA_ONTOLOGY):  # dbo:Person is a class, dbo:birthPlace a property
            local = iri[len(DBPEDIA_ONTOLOGY):]
            return "class" if local[:1].isupper() else "property"
        return None


class ProfileError(KBQAError, ValueError):
    """An unknown profile name (stage usage, exit 2) or a bad profile file (bad input, exit 3). Still a
    ValueError, as get_profile raised before."""

    def __init__(self, message: str, **kw: object):
        kw.setdefault("stage", "ingest")
        super().__init__(message, **kw)  # type: ignore[arg-type]


class GenericProfile(KBProfile):
    """A KB with plain IRIs and rdfs:label; prefixes and predicates may be overridden from JSON."""

    name = "generic"

    @classmethod
    def from_config(cls, path: str | Path) -> GenericProfile:
        """A generic profile with overrides read from a small JSON file (data only, never code); a file that is
        not such an object is a `ProfileError` naming the file and the key."""
        data = _read_profile_file(Path(path))
        allowed = set(CONFIG_KEYS)
        unknown = set(data) - allowed - {"name"}
        if unknown:
            raise ProfileError(f"unknown profile keys {sorted(unknown)}; allowed: {sorted(allowed)}", file=str(path))
        for key, kind in {**CONFIG_KEYS, "name": "text"}.items():
            if key in data and not _is_kind(data[key], kind):
                raise ProfileError(f"profile key {key!r} must be {CONFIG_KINDS[kind]}, not {type(data[key]).__name__}",
                                   file=str(path))
        attrs: dict = {"name": data.get("name", "generic")}
        for key in allowed & set(data):
            value = data[key]
            attrs[key] = tuple(value) if isinstance(value, list) else value
        if "prefixes" in attrs:
            attrs["prefixes"] = {**KBProfile.prefixes, **attrs["prefixes"]}
        return type("ConfiguredProfile", (GenericProfile,), attrs)()


PROFILES: dict[str, type[KBProfile]] = {
    "wikidata": WikidataProfile,
    "freebase": FreebaseProfile,
    "dbpedia": DBpediaProfile,
    "generic": GenericProfile,
}


def get_profile(name: str | KBProfile) -> KBProfile:
    """A profile by name (`wikidata`, `freebase`, `generic`) or the path of a JSON override file; anything else
    is a `ProfileError` (a usage error for a name, bad input for a file)."""
    if isinstance(name, KBProfile):
        return name
    if name in PROFILES:
        return PROFILES[name]()
    if name.endswith(".json") or "/" in name:
        if not Path(name).is_file():
            raise ProfileError(f"no profile file {name!r}; give one of {sorted(PROFILES)} or a JSON profile file",
                               stage="usage")
        return GenericProfile.from_config(name)
    raise ProfileError(f"unknown KB profile {name!r}; choose one of {sorted(PROFILES)} or a JSON file",
                       stage="usage")


# ---- JSON profile files ------------------------------------------------------------------------------------
CONFIG_KEYS: dict[str, str] = {  # key -> kind of value (CONFIG_KINDS)
    "prefixes": "text map", "label_predicates": "text list", "description_predicates": "text list",
    "alias_predicates": "text list", "type_predicate": "text", "subclass_predicate": "text",
    "property_types": "text list", "class_types": "text list", "endpoint_queries": "text map",
}
CONFIG_KINDS = {"text": "a string", "text list": "a list of strings",
                "text map": "an object of strings (name -> string)"}


def _is_kind(value: object, kind: str) -> bool:
    if kind == "text":
        return isinstance(value, str)
    if kind == "text list":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


def _read_profile_file(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ProfileError(f"cannot read the profile file: {e.strerror}", file=str(path)) from None
    except UnicodeDecodeError:
        raise ProfileError("the profile file is not UTF-8 text", file=str(path)) from None
    except json.JSONDecodeError as e:
        raise ProfileError(f"the profile file is not JSON: {e.msg}", file=str(path), line=e.lineno,
                           column=e.colno) from None
    if not isinstance(data, dict):
        raise ProfileError(f"a profile file holds a JSON object of settings, not a {type(data).__name__}",
                           file=str(path))
    return data


def detect_profile(iris: list[str]) -> str:
    """Guess the profile from a sample of IRIs seen in a source."""
    wd = sum(1 for i in iris if i.startswith("http://www.wikidata.org/"))
    fb = sum(1 for i in iris if i.startswith(FREEBASE_NS))
    if wd and wd >= fb:
        return "wikidata"
    if fb:
        return "freebase"
    if sum(1 for i in iris if i.startswith("http://dbpedia.org/")) > len(iris) // 4:
        return "dbpedia"
    return "generic"
