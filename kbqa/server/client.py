"""A small client of `kbqa serve` (standard library only: it must not import torch or load models).

Used by `kbqa ask --server URL`. Errors are KBQAErrors: the server's own `{"error": {"stage", "message"}}`
keeps its stage; a server that is not there or answers something else is a usage error naming the URL.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from kb_dumps.json_types import JsonObject, JsonValue
from kb_dumps.stage_errors import KBQAError


class ServerClient:
    def __init__(self, url: str, timeout_s: float = 120.0):
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s

    def _call(self, path: str, body: JsonObject | None = None) -> JsonValue:
        data = json.dumps(body).encode("utf-8") if body is not None else None
        try:
            req = urllib.request.Request(self.url + path, data=data,
                                         headers={"content-type": "application/json", "accept": "application/json"})
        except ValueError as e:  # not a URL urllib can open ("unknown url type")
            raise KBQAError(f"{self.url!r} is not a kbqa server URL ({e}); give e.g. http://127.0.0.1:8000",
                            stage="usage") from None
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:  # noqa: S310 - a URL the user gave
                raw = resp.read()
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                err = json.loads(raw)["error"]
            except (ValueError, KeyError, TypeError):
                raise KBQAError(f"the kbqa server at {self.url} answered HTTP {e.code} to {path}: "
                                f"{raw[:200].decode('utf-8', 'replace')}", stage="usage") from None
            raise KBQAError(f"the kbqa server at {self.url} answered HTTP {e.code}: {err.get('message')}",
                            stage=err.get("stage") or "usage") from None
        except (urllib.error.URLError, OSError, ValueError) as e:  # ValueError: http.client.InvalidURL
            reason = getattr(e, "reason", e)
            raise KBQAError(f"no kbqa server answers at {self.url} ({reason}); start one with `kbqa serve`, or "
                            "leave out --server to answer in this process", stage="usage") from None
        try:
            return json.loads(raw)
        except ValueError:
            raise KBQAError(f"the kbqa server at {self.url} answered {path} with something that is not JSON",
                            stage="usage") from None

    def health(self) -> JsonValue:
        return self._call("/healthz")

    def ask(self, question: str, frontend: str = "desq", execute: bool = True) -> JsonValue:
        return self._call("/v1/ask", {"question": question, "frontend": frontend, "execute": execute})
