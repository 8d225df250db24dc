"""The `openai` backend: any OpenAI-compatible chat-completions server (vLLM, llama.cpp server, Ollama, hosted).

Standard library HTTP (no client package): separate connect and read timeouts, retries with
exponential backoff on connection failures, timeouts, HTTP 429 and 5xx; a GBNF grammar is sent in
the request field the server reads (`grammar` for llama.cpp server, `guided_grammar` for vLLM),
and `extra_body` carries any other server option (e.g. `response_format` with a JSON schema).
"""

from __future__ import annotations

import http.client
import json
import time
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from kb_dumps.json_types import JsonObject
from kb_dumps.stage_errors import TranslateError
from kbqa.backends.base import Backend, GenerateResult

if TYPE_CHECKING:
    from kbqa.settings import TranslatorSettings

RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


class _Retryable(Exception):
    """One failed attempt that may succeed when tried again."""


class OpenAIBackend(Backend):
    name = "openai"

    def __init__(self, endpoint: str, model: str = "", *, api_key: str | None = None, timeout_s: float = 120.0,
                 connect_timeout_s: float = 5.0, retries: int = 2, backoff_s: float = 0.5, grammar_field: str = "",
                 extra_body: JsonObject | None = None):
        parts = urlsplit(endpoint)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise TranslateError(f"the model endpoint {endpoint!r} is not an http(s) URL (e.g. "
                                 "http://127.0.0.1:8080/v1)", stage="usage")
        self.endpoint = endpoint.rstrip("/")
        self._parts = parts
        self.model = model
        self.api_key = api_key
        self.timeout_s = timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.retries = max(0, retries)
        self.backoff_s = backoff_s
        self.grammar_field = grammar_field
        self.extra_body = dict(extra_body or {})

    @classmethod
    def from_settings(cls, s: TranslatorSettings) -> OpenAIBackend:
        return cls(s.endpoint, s.model, api_key=s.api_key(), timeout_s=s.timeout_s,
                   connect_timeout_s=s.connect_timeout_s, retries=s.retries, backoff_s=s.backoff_s,
                   grammar_field=s.grammar_field, extra_body=s.extra_body)

    # ---- one request -----------------------------------------------------------------------
    def _post(self, path: str, body: JsonObject) -> JsonObject:
        p = self._parts
        conn_cls = http.client.HTTPSConnection if p.scheme == "https" else http.client.HTTPConnection
        conn = conn_cls(p.hostname, p.port, timeout=self.connect_timeout_s)  # type: ignore[arg-type]
        url = f"{self.endpoint}{path}"
        try:
            try:
                conn.connect()
            except TimeoutError:
                raise _Retryable(f"cannot connect to the model server at {url} within {self.connect_timeout_s:g} s") from None
            except OSError as e:
                raise _Retryable(f"cannot reach the model server at {url} ({e.strerror or e}); is it running?") from None
            conn.sock.settimeout(self.timeout_s)  # the answer may take long: the read timeout is separate
            headers = {"Content-Type": "application/json", "Accept": "application/json"}
            if self.api_key:
                headers["Authorization"] = f"Bearer {self.api_key}"
            try:
                conn.request("POST", (p.path.rstrip("/") + path) or path, json.dumps(body).encode("utf-8"), headers)
                resp = conn.getresponse()
                raw = resp.read()
            except TimeoutError:
                raise _Retryable(f"the model server at {url} did not answer within {self.timeout_s:g} s (timeout)") from None
            except (OSError, http.client.HTTPException) as e:
                raise _Retryable(f"the connection to the model server at {url} failed: {e}") from None
        finally:
            conn.close()
        text = raw.decode("utf-8", "replace")
        if resp.status in RETRY_STATUS:
            raise _Retryable(f"the model server at {url} answered HTTP {resp.status}: {text[:200]}")
        if resp.status >= 400:
            raise TranslateError(f"the model server at {url} refused the request: HTTP {resp.status}: {text[:300]}")
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            raise TranslateError(f"the model server at {url} answered something that is not JSON: {text[:200]!r}") from None
        if not isinstance(data, dict):
            raise TranslateError(f"the model server at {url} answered JSON that is not an object")
        return data

    def _with_retries(self, path: str, body: JsonObject) -> tuple[JsonObject, int]:
        last = ""
        for attempt in range(self.retries + 1):
            try:
                return self._post(path, body), attempt + 1
            except _Retryable as e:
                last = str(e)
                if attempt < self.retries:
                    time.sleep(self.backoff_s * (2 ** attempt))
        raise TranslateError(f"{last} (gave up after {self.retries + 1} attempt(s))")

    # ---- the interface -----------------------------------------------------------------------
    def generate(self, prompt: str | list[dict[str, str]], grammar: str | None = None, max_tokens: int = 512,
                 temperature: float = 0.0, stop: list[str] | None = None) -> GenerateResult:
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
        body: JsonObject = {"model": self.model or "default", "messages": messages, "max_tokens": max_tokens,
                                "temperature": temperature}
        if stop:
            body["stop"] = list(stop)
        if grammar and self.grammar_field:
            body[self.grammar_field] = grammar
        body.update(self.extra_body)
        t0 = time.perf_counter()
        data, attempts = self._with_retries("/chat/completions", body)
        seconds = time.perf_counter() - t0
        try:
            choice = data["choices"][0]
            text = choice["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise TranslateError(f"the model server's answer has no choices[0].message.content: "
                                 f"{json.dumps(data)[:200]}") from None
        if not isinstance(text, str):
            raise TranslateError("the model server's answer content is not text")
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        estimated = not usage
        tokens_in = int(usage.get("prompt_tokens", 0)) if usage else _estimate(messages)
        tokens_out = int(usage.get("completion_tokens", 0)) if usage else max(1, len(text) // 4)
        return GenerateResult(text, tokens_in, tokens_out, seconds, self.name, str(data.get("model") or self.model),
                              choice.get("finish_reason"), estimated, attempts)


def _estimate(messages: list[dict[str, str]]) -> int:
    """About four characters a token: used only when the server reports no usage."""
    return max(1, sum(len(m.get("content", "")) for m in messages) // 4)
