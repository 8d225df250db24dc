"""The bundled sample KBs: where their dumps are and how `kbqa ingest --sample NAME` builds them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kb_dumps.stage_errors import IngestError

SAMPLES_DIR = Path(__file__).parent / "samples"


@dataclass(frozen=True)
class Sample:
    name: str
    files: tuple[str, ...]
    profile: str
    description: str

    def paths(self) -> list[Path]:
        paths = [SAMPLES_DIR / f for f in self.files]
        missing = [p for p in paths if not p.is_file()]
        if missing:
            raise IngestError(f"the bundled sample {self.name} is missing {missing[0].name}; "
                              "reinstall kbqa or run `python -m kb_dumps.build_samples`", file=str(missing[0]))
        return paths


SAMPLES: dict[str, Sample] = {
    "wikidata-mini": Sample("wikidata-mini", ("wikidata-mini.nt.gz",), "wikidata",
                            "SimpleQuestions-Wikidata answerable triples + CoDEx, with labels (~422k triples)"),
    "bestiary": Sample("bestiary", ("bestiary.rdf.gz",), "generic",
                       "BESTIARY fantasy-creature KG, RDF/XML (~98k triples)"),
}


def get_sample(name: str) -> Sample:
    if name not in SAMPLES:
        raise IngestError(f"unknown sample {name!r}; bundled samples: {', '.join(SAMPLES)}", stage="usage")
    return SAMPLES[name]
