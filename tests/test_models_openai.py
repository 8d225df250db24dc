"""The `openai` backend against real HTTP servers on 127.0.0.1 started here.

llama.cpp is not built in this session, so the server is a tiny OpenAI-compatible one written with
`http.server` that returns canned completions: enough for the protocol, grammar pass-through,
retries, timeouts and a server that is down. The real llama.cpp server test belongs with the
llama-cpp backend.
"""

from __future__ import annotations

import json
import socket
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from endpoint_servers import LoopbackServer

from kbqa.backends.openai import OpenAIBackend
from kbqa.translators.base import TranslateError
from kbqa.translators.model import ModelTranslator

# What the canned server answers: a DeSQ text, passed through as it is.
DESQ = (Path(__file__).parent / "fixtures" / "desq_real" / "w_sq_1.desq").read_text(encoding="utf-8")


class _Server(LoopbackServer):
    """A canned chat-completions server: `fail_first` 503s, then answers (after `delay` seconds)."""

    def __init__(self, fail_first: int = 0, delay: float = 0.0, status: int = 200, usage: bool = True):
        self.requests: list[dict] = []
        self.fail_first, self.delay, self.status, self.usage = fail_first, delay, status, usage
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                if len(outer.requests) <= outer.fail_first:
                    return self._send(503, {"error": "loading model"})
                if outer.status != 200:
                    return self._send(outer.status, {"error": {"message": "bad request: unknown field"}})
                time.sleep(outer.delay)
                answer = {"model": body.get("model"), "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": DESQ}, "finish_reason": "stop"}]}
                if outer.usage:
                    answer["usage"] = {"prompt_tokens": 321, "completion_tokens": 87, "total_tokens": 408}
                self._send(200, answer)

            def _send(self, code: int, obj: dict) -> None:
                data = json.dumps(obj).encode()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

        super().__init__(Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_chat_completion_with_grammar_usage_and_key():
    with _Server() as srv:
        backend = OpenAIBackend(srv.url, "tiny", api_key="sk-test", grammar_field="grammar",
                                extra_body={"cache_prompt": True})
        res = backend.generate([{"role": "user", "content": "hi"}], grammar='root ::= "x"', max_tokens=64,
                               stop=["\n\n\n"])
    req = srv.requests[0]
    assert req["path"] == "/v1/chat/completions" and req["auth"] == "Bearer sk-test"
    assert req["body"]["grammar"] == 'root ::= "x"' and req["body"]["cache_prompt"] is True
    assert req["body"]["max_tokens"] == 64 and req["body"]["stop"] == ["\n\n\n"] and req["body"]["model"] == "tiny"
    assert res.text == DESQ and res.tokens_in == 321 and res.tokens_out == 87 and not res.tokens_estimated
    assert res.finish_reason == "stop" and res.attempts == 1 and res.seconds > 0


def test_vllm_grammar_field_and_no_grammar_without_a_field():
    with _Server() as srv:
        OpenAIBackend(srv.url, grammar_field="guided_grammar").generate("q", grammar="root ::= [a-z]+")
        OpenAIBackend(srv.url).generate("q", grammar="root ::= [a-z]+")
    assert srv.requests[0]["body"]["guided_grammar"] == "root ::= [a-z]+"
    assert "grammar" not in srv.requests[1]["body"] and "guided_grammar" not in srv.requests[1]["body"]


def test_retries_with_backoff_until_the_server_answers():
    with _Server(fail_first=2) as srv:
        res = OpenAIBackend(srv.url, retries=2, backoff_s=0.01).generate("q")
    assert res.attempts == 3 and len(srv.requests) == 3 and res.text == DESQ


def test_gives_up_after_the_retries():
    with _Server(fail_first=10) as srv, pytest.raises(TranslateError) as e:
        OpenAIBackend(srv.url, retries=1, backoff_s=0.01).generate("q")
    assert len(srv.requests) == 2
    assert e.value.info.stage == "translate" and "HTTP 503" in e.value.info.message and "2 attempt" in str(e.value)


def test_a_refused_request_is_not_retried():
    with _Server(status=400) as srv, pytest.raises(TranslateError) as e:
        OpenAIBackend(srv.url, retries=3, backoff_s=0.01).generate("q")
    assert len(srv.requests) == 1 and "HTTP 400" in e.value.info.message


def test_server_down_is_a_clear_translate_error():
    url = f"http://127.0.0.1:{_free_port()}/v1"
    with pytest.raises(TranslateError) as e:
        OpenAIBackend(url, retries=1, backoff_s=0.01).generate("q")
    assert e.value.info.stage == "translate" and e.value.exit_code == 4
    assert "cannot reach the model server" in e.value.info.message and "is it running" in e.value.info.message


def test_a_slow_server_times_out():
    with _Server(delay=2.0) as srv, pytest.raises(TranslateError) as e:
        OpenAIBackend(srv.url, timeout_s=0.3, retries=0).generate("q")
    assert e.value.info.stage == "translate" and "did not answer within 0.3 s" in e.value.info.message


def test_missing_usage_is_estimated():
    with _Server(usage=False) as srv:
        res = OpenAIBackend(srv.url).generate("a question of some length")
    assert res.tokens_estimated and res.tokens_in > 0 and res.tokens_out > 0


def test_bad_endpoint_is_a_usage_error():
    with pytest.raises(TranslateError) as e:
        OpenAIBackend("localhost:8080")
    assert e.value.info.stage == "usage"


def test_model_translator_sends_the_format_and_returns_parseable_desq():
    from kbqa.frontends.desq import parse_desq

    with _Server() as srv:
        tr = ModelTranslator(OpenAIBackend(srv.url, "tiny"), max_tokens=300)
        res = tr.translate("where was sasha vujačić born", qid="q1")
        again = tr.translate("where was sasha vujačić born", previous="FORMAT desq/1\nnonsense",
                             errors=["line 2: unknown section"])
    msgs = srv.requests[0]["body"]["messages"]
    assert msgs[0]["role"] == "system" and "GROUNDING" in msgs[0]["content"]
    assert msgs[-1]["content"].endswith("where was sasha vujačić born")
    repair = srv.requests[1]["body"]["messages"]
    assert repair[-2]["role"] == "assistant" and "unknown section" in repair[-1]["content"]
    assert parse_desq(res.text).ok and res.tokens_in == 321 and res.backend == "openai" and res.model == "tiny"
    assert again.details["repair"] is True
