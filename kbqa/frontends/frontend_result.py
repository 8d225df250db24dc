"""What every front-end's parse returns, the part the Engine reads of each: the Plan, the problems, `ok`."""

from __future__ import annotations

from dataclasses import dataclass, field

from assembler.plan import Query
from kb_dumps.stage_errors import ErrorInfo


@dataclass
class FrontendResult:
    """The Plan (None when any problem was found) and every problem found. Each front-end's result adds its parsed
    parts and `constraints` (what the step report lists: `desq.ParseResult`, `QCompilerResult`, `PyragResult`)."""

    plan: Query | None
    errors: list[ErrorInfo] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.plan is not None and not self.errors

    def _result_dict(self, fmt: str) -> dict:
        """The start of `to_dict`: the format's name, the Plan and the problems."""
        return {"format": fmt, "plan": self.plan.to_dict() if self.plan else None,
                "errors": [e.to_dict() for e in self.errors]}
