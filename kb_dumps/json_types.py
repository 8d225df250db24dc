"""Recursive type aliases for values parsed from JSON or written as JSON.

``JsonValue`` is anything ``json.loads`` can return (and ``json.dumps`` accepts without a custom
encoder); ``JsonObject`` is a JSON object, the usual shape of a parsed file, an HTTP body or a
record written to a results file. Use them only where a value really is JSON; a value with a known
shape gets its own class or ``TypedDict``.

These are plain (implicitly recursive) aliases for type checkers and readers. pydantic cannot build a
validator from them (it recurses without end), so a pydantic model's field keeps ``pydantic.JsonValue``.
"""

from __future__ import annotations

from typing import TypeAlias

JsonValue: TypeAlias = str | int | float | bool | None | list["JsonValue"] | dict[str, "JsonValue"]
JsonObject: TypeAlias = dict[str, JsonValue]

__all__ = ["JsonObject", "JsonValue"]
