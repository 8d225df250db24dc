"""Checked settings: numeric setting types (finite, in range) and the settings base whose bad value is one usage
line naming its environment variable.

Every `BaseSettings` of the project derives from `CheckedSettings` and declares each number with one of these
types (or its own `Field` bounds), so that `KBQA_SERVER_PORT=-1` or `KBQA_QUERY_TIMEOUT_S=nan` stops the command
with exit code 2 and `error: [usage] setting port (environment KBQA_SERVER_PORT): …`, never a traceback or a
failure deep inside a query. The command-line flags of the same values have the same bounds
(`kbqa/commands/common.py`).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings

from kb_dumps.stage_errors import KBQAError, echo

MAX_SECONDS = 86_400.0  # a time budget past a day is a typo (1e9 overflowed the worker's poll)

Seconds = Annotated[float, Field(gt=0, le=MAX_SECONDS, allow_inf_nan=False)]  # a time budget: (0, a day]
Delay = Annotated[float, Field(ge=0, le=MAX_SECONDS, allow_inf_nan=False)]  # a wait that may be none: [0, a day]
Port = Annotated[int, Field(ge=1, le=65_535)]  # a TCP port
Count = Annotated[int, Field(ge=1)]  # how many of something, at least one
Cap = Annotated[int, Field(ge=0)]  # a row cap or a number of extra attempts: none is allowed
Workers = Annotated[int, Field(ge=1, le=1024)]  # threads or processes
Rounds = Annotated[int, Field(ge=0, le=100)]  # retries, repair rounds
Rate = Annotated[float, Field(ge=0, allow_inf_nan=False)]  # a finite non-negative rate or temperature
Score = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]  # a calibrated score


class SettingsError(KBQAError):
    """A setting (from the environment, `.env` or a settings file) has a value outside its type or range."""

    def __init__(self, message: str):
        super().__init__(message, stage="usage")


def settings_problem(cls: type[BaseSettings], error: ValidationError) -> str:
    """One line: each bad setting as `setting NAME (environment PREFIX_NAME): why (got VALUE)`."""
    prefix = str(cls.model_config.get("env_prefix", ""))
    parts = []
    for err in error.errors():
        loc = [str(x) for x in err.get("loc", ())]
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        if not loc:
            parts.append(msg)
            continue
        name = loc[0]
        got = f" (got {echo(err['input'])})" if "input" in err and not isinstance(err["input"], dict) else ""
        parts.append(f"setting {'.'.join(loc)} (environment {prefix}{name.upper()}): {msg}{got}")
    return "; ".join(parts) or f"{cls.__name__}: the settings are not valid"


class CheckedSettings(BaseSettings):
    """`BaseSettings` whose bad value is a `SettingsError` (stage usage, exit code 2) naming the setting and its
    environment variable, instead of pydantic's multi-line `ValidationError`."""

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as e:
            raise SettingsError(settings_problem(type(self), e)) from None
