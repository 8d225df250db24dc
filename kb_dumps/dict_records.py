"""`DictRecord`: the JSON round trip of a dataclass of plain fields, written once for the records of every layer
(grounding candidates, index statistics, assembly attempts, decompose's grounding entries, …)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Self


class DictRecord:
    """Mixed into a dataclass whose fields are plain data (str, numbers, bools, lists and dicts of those):
    `to_dict` is `dataclasses.asdict`, `from_dict` the constructor called with the dict's keys. A record holding
    other records overrides `from_dict` to rebuild them."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[arg-type]  # mixed into dataclasses only

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Self:
        return cls(**d)
