"""Grounding: label memory -> vector + lexical indexes -> ranked KB ids for a placeholder, URI correction."""

from grounding.build import IndexStats, build_index
from grounding.candidates import Candidate, Correction, GroundingResult
from grounding.ground import DEFAULT_THRESHOLD, Grounder, correct, get_grounder, ground

__all__ = ["DEFAULT_THRESHOLD", "Candidate", "Correction", "Grounder", "GroundingResult", "IndexStats",
           "build_index", "correct", "get_grounder", "ground"]
