"""A runner for the W3C SPARQL 1.1 Protocol test manifest (tests/fixtures/w3c-sparql-protocol/, W3C test-suite
licence: see LICENSE.md there): read it with rdflib, issue each request, check status, boolean and content type.

The 7 `update_*` tests expect an update to succeed: not applicable to a read-only endpoint, never counted as
passes. The `bad_update_*` tests expect a 4xx, which a read-only endpoint must give too: they count.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree

import httpx
import rdflib
from rdflib.collection import Collection

MANIFEST_DIR = Path(__file__).parent / "fixtures" / "w3c-sparql-protocol"
MF = rdflib.Namespace("http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#")
HT = rdflib.Namespace("http://www.w3.org/2011/http#")
CNT = rdflib.Namespace("http://www.w3.org/2011/content#")
UT = rdflib.Namespace("http://www.w3.org/2009/sparql/tests/test-update#")
HTS = "http://www.w3.org/2011/http-statusCodes#StatusCode"
RESULT_TYPES = ("application/sparql-results+json", "application/sparql-results+xml", "application/json",
                "application/xml", "text/xml", "text/csv", "text/tab-separated-values")
RDF_TYPES = ("text/turtle", "application/n-triples", "application/rdf+xml", "text/plain", "application/turtle",
             "application/n-quads", "application/trig")  # a dataset serialization is RDF too


@dataclass
class Outcome:
    name: str
    applicable: bool
    passed: bool = False
    why: str = ""
    statuses: list[int] = field(default_factory=list)


def graph_data() -> dict[str, Path]:
    """graph IRI -> data file, for every named graph the tests load."""
    g = rdflib.Graph().parse(MANIFEST_DIR / "manifest.ttl", format="turtle")
    return {str(g.value(node, rdflib.RDFS.label)): MANIFEST_DIR / Path(str(g.value(node, UT.graph))).name
            for node in g.objects(None, UT.graphData)}


def nquads() -> str:
    """The data files as N-Quads, each in its named graph (the store the endpoints serve)."""
    lines = []
    for iri, path in sorted(graph_data().items()):
        for line in path.read_text().splitlines():
            if line.strip():
                lines.append(f"{line.strip().removesuffix('.').strip()} <{iri}> .")
    return "\n".join(lines) + "\n"


def _boolean(res: httpx.Response) -> bool | None:
    ctype = res.headers.get("content-type", "").split(";")[0].strip()
    try:
        if "json" in ctype:
            return json.loads(res.content)["boolean"]
        if "xml" in ctype:
            root = ElementTree.fromstring(res.content)
            node = root.find("{http://www.w3.org/2005/sparql-results#}boolean")
            return None if node is None else node.text.strip() == "true"
    except (ValueError, KeyError, ElementTree.ParseError):
        return None
    return None


def _check(res: httpx.Response, g: rdflib.Graph, resp: rdflib.term.Node) -> str:
    wanted = {str(s).removeprefix(HTS)[0] for s in g.objects(resp, MF.expectedStatus)}
    if wanted and str(res.status_code)[0] not in wanted:
        return f"status {res.status_code}, expected {'/'.join(sorted(x + 'xx' for x in wanted))}"
    ctype = res.headers.get("content-type", "").split(";")[0].strip()
    fmt = g.value(resp, MF.expectedFormat)
    if fmt is not None:
        ok = {"boolean": RESULT_TYPES, "tabular": RESULT_TYPES, "RDF": RDF_TYPES}[str(fmt)]
        if ctype not in ok:
            return f"content type {ctype!r} for {fmt} results"
    expected = g.value(resp, MF.expectedBoolean)
    if expected is not None and _boolean(res) != expected.toPython():
        return f"boolean {_boolean(res)}, expected {expected.toPython()}"
    return ""


def run(endpoint: str) -> list[Outcome]:
    """Every test of the manifest against `endpoint` (the URL that replaces the manifest's `/sparql/`)."""
    g = rdflib.Graph().parse(MANIFEST_DIR / "manifest.ttl", format="turtle")
    manifest = next(g.subjects(rdflib.RDF.type, MF.Manifest))
    outcomes = []
    with httpx.Client(timeout=30) as client:
        for test in Collection(g, g.value(manifest, MF.entries)):
            name = str(test).rsplit("#", 1)[-1]
            if name.startswith("update_"):  # expects its update to succeed (2xx); a bad_update_* expects 4xx
                outcomes.append(Outcome(name, applicable=False, why="needs a writable endpoint"))
                continue
            out = Outcome(name, applicable=True, passed=True)
            action = g.value(test, MF.action)
            for req in Collection(g, g.value(action, HT.requests)):
                path = str(g.value(req, HT.absolutePath)).removeprefix("/sparql/")
                headers = {str(g.value(h, HT.fieldName)): str(g.value(h, HT.fieldValue))
                           for h in Collection(g, g.value(req, HT.headers) or rdflib.RDF.nil)}
                body = g.value(req, HT.body)
                content = None
                if body is not None:
                    enc = str(g.value(body, CNT.characterEncoding) or "UTF-8")
                    content = str(g.value(body, CNT.chars)).encode(enc)
                res = client.request(str(g.value(req, HT.methodName)), endpoint + path, headers=headers,
                                     content=content)
                out.statuses.append(res.status_code)
                why = _check(res, g, g.value(req, HT.resp))
                if why:
                    out.passed, out.why = False, why
                    break
            outcomes.append(out)
    return outcomes


def summary(outcomes: list[Outcome]) -> str:
    applicable = [o for o in outcomes if o.applicable]
    passed = sum(o.passed for o in applicable)
    return f"{passed} of {len(applicable)} applicable ({len(outcomes) - len(applicable)} update tests not applicable)"
