"""The OpenAI API faked at the HTTP wire, on a real loopback port: what the ``openai``
SDK of the providers talks to in tests, as Gemini's REST API is faked in
``tests/gemini_wire.py``.

It answers ``POST .../embeddings`` and ``POST .../chat/completions`` in the shapes the
OpenAI API reference documents (non-streaming ``chat.completion`` objects with
``usage``; ``list`` of ``embedding`` objects), in three flavours whose known
differences it keeps:

- ``openai``: ``Authorization: Bearer <key>`` required (401 ``invalid_api_key``
  otherwise), paths under ``/v1``.
- ``azure``: ``/openai/deployments/{deployment}/...?api-version=...``, the key in the
  ``api-key`` header (401 otherwise), 404 ``Resource not found`` without the
  ``api-version`` query or for another path; the deployment answers, whatever
  ``model`` the body names.
- ``ollama`` (its ``openai/openai.go``): no key checked; images only as
  ``data:image/(jpeg|jpg|png|webp);base64,`` URLs (400 ``invalid image input``
  otherwise); ``max_completion_tokens`` is not a field it reads (ignored, while
  ``max_tokens`` would cap); ``response_format.json_schema`` is read for its ``schema``
  only; answers carry ``system_fingerprint: fp_ollama``; errors are
  ``{"error": {"message", "type": "api_error", "param": null, "code": null}}``.

Every flavour refuses ``stream: true`` with 400 (the providers never stream) and
``encoding_format`` other than ``float`` (the SDK's default is base64; the providers
ask for floats, which every server sends). ``script`` holds one-off replies used in
order before the default answers; ``hold`` (an event) makes the next answers wait
until it is set, to drive a client timeout without sleeping in the test.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

from tests.gemini_wire import wire_tokens

Json = dict[str, Any]
Flavour = Literal["openai", "azure", "ollama"]

API_KEY = "sk-test-not-a-real-key-0123456789abcdef"
NATIVE_DIMS = 12
OLLAMA_IMAGE = re.compile(r"^data:(?:image/(?:jpeg|jpg|png|webp))?;base64,")


@dataclass(frozen=True)
class WireRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Json

    @property
    def endpoint(self) -> str:
        return (
            self.path.rsplit("/", 1)[-1]
            if self.path.endswith("embeddings")
            else ("chat/completions" if self.path.endswith("/chat/completions") else self.path)
        )

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


@dataclass(frozen=True)
class WireReply:
    status: int
    body: Json
    headers: dict[str, str] = field(default_factory=dict)


Reply = Callable[[WireRequest], WireReply]


def wire_vector(text: str, dims: int) -> list[float]:
    """A deterministic, deliberately non-unit vector of ``dims`` entries."""
    digest = b""
    counter = 0
    while len(digest) < dims:
        digest += hashlib.sha256(f"{counter}:{text}".encode()).digest()
        counter += 1
    return [float(byte) - 100.0 for byte in digest[:dims]]


def error_reply(
    status: int, message: str, *, code: str | None = None, headers: dict[str, str] | None = None
) -> Reply:
    """An error as OpenAI and Azure send it."""
    kind = "invalid_request_error" if status < 500 else "server_error"
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return lambda request: WireReply(status, body, headers or {})


def chat_reply(
    content: str | None,
    *,
    finish: str | None = "stop",
    refusal: str | None = None,
    reasoning_tokens: int = 0,
) -> Reply:
    """A ``chat.completion`` whose one choice says ``content``; usage counted by
    ``wire_tokens`` over what the request sent (reasoning tokens added to the output,
    as OpenAI counts them in ``completion_tokens``)."""

    def reply(request: WireRequest) -> WireReply:
        return WireReply(
            200,
            completion(
                request, content, finish=finish, refusal=refusal, reasoning=reasoning_tokens
            ),
        )

    return reply


def request_text(body: Json) -> str:
    """Every text the request sent the model."""
    texts: list[str] = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts += [str(part.get("text", "")) for part in content if part.get("type") == "text"]
    return "\n".join(texts)


def completion(
    request: WireRequest,
    content: str | None,
    *,
    finish: str | None = "stop",
    refusal: str | None = None,
    reasoning: int = 0,
    flavour: Flavour = "openai",
) -> Json:
    prompt = wire_tokens(request_text(request.body))
    output = wire_tokens(content or "") + reasoning
    usage: Json = {
        "prompt_tokens": prompt,
        "completion_tokens": output,
        "total_tokens": prompt + output,
    }
    if reasoning:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    message: Json = {"role": "assistant", "content": content}
    if flavour != "ollama":
        message["refusal"] = refusal
    return {
        "id": "chatcmpl-fake-1",
        "object": "chat.completion",
        "created": 1_765_000_000,
        "model": request.body.get("model", ""),
        "system_fingerprint": "fp_ollama" if flavour == "ollama" else "fp_fake",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage,
    }


@dataclass
class FakeOpenAI:
    """An OpenAI-compatible API: records requests, answers by endpoint and flavour.

    ``description``, ``merged`` and ``facts`` are the default answers to an image
    description, a merge and an extraction (a JSON object, or a callable of the
    request returning one). Safe to call from several threads at once.
    """

    flavour: Flavour = "openai"
    description: str = "A whiteboard photo listing the Q3 launch plan for Project Falcon."
    merged: str = "Project Falcon launches in Q3. The launch owner is Dana."
    facts: Json | Callable[[WireRequest], Json] = field(default_factory=lambda: {"facts": []})
    requests: list[WireRequest] = field(default_factory=list)
    script: list[Reply] = field(default_factory=list)
    hold: threading.Event | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def of(self, endpoint: str) -> list[WireRequest]:
        """The requests to ``embeddings`` or ``chat/completions``, in order."""
        return [request for request in self.requests if request.endpoint == endpoint]

    def handle(self, request: WireRequest) -> WireReply:
        with self._lock:
            self.requests.append(request)
            hold = self.hold
        if hold is not None:
            hold.wait(timeout=30)  # released by the test once its client gave up
        refused = self._refusal(request)
        if refused is not None:
            return refused
        with self._lock:
            scripted = self.script.pop(0) if self.script else None
        if scripted is not None:
            return scripted(request)
        if request.endpoint == "embeddings":
            return self._embeddings(request)
        if request.endpoint == "chat/completions":
            return self._chat(request)
        return self._error(404, "Resource not found")

    def _error(self, status: int, message: str, code: str | None = None) -> WireReply:
        if self.flavour == "ollama":
            kind = "invalid_request_error" if status == 400 else "api_error"
            body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
            return WireReply(status, body)
        if self.flavour == "azure" and status == 404:
            return WireReply(404, {"error": {"code": "404", "message": message}})
        kind = "invalid_request_error" if status < 500 else "server_error"
        return WireReply(
            status, {"error": {"message": message, "type": kind, "param": None, "code": code}}
        )

    def _refusal(self, request: WireRequest) -> WireReply | None:
        """What the flavour refuses before answering: auth, routes, streaming."""
        if self.flavour == "openai":
            if request.header("authorization") != f"Bearer {API_KEY}":
                return self._error(401, "Incorrect API key provided.", "invalid_api_key")
            if not request.path.startswith("/v1/"):
                return self._error(404, f"Invalid URL (POST {request.path})")
        elif self.flavour == "azure":
            if request.header("api-key") != API_KEY:
                return WireReply(
                    401,
                    {
                        "error": {
                            "code": "401",
                            "message": "Access denied due to invalid subscription key or "
                            "wrong API endpoint.",
                        }
                    },
                )
            if not re.fullmatch(
                r"/openai/deployments/[^/]+/(embeddings|chat/completions)", request.path
            ):
                return self._error(404, "Resource not found")
            if not request.query.get("api-version"):
                return self._error(404, "Resource not found")
        elif not request.path.startswith("/v1/"):
            return self._error(404, "404 page not found")
        if request.body.get("stream"):
            return self._error(400, "the providers never stream; the fake refuses stream: true")
        if request.endpoint == "embeddings" and request.body.get("encoding_format") != "float":
            return self._error(400, "the fake answers floats only: ask encoding_format float")
        return None

    def deployment(self, request: WireRequest) -> str:
        """What answers: Azure's deployment in the path, else the body's model."""
        if self.flavour == "azure":
            return request.path.split("/")[3]
        return str(request.body.get("model", ""))

    def _embeddings(self, request: WireRequest) -> WireReply:
        raw = request.body.get("input")
        texts = [raw] if isinstance(raw, str) else list(raw or [])
        dims = int(request.body.get("dimensions") or NATIVE_DIMS)
        data = [
            {"object": "embedding", "index": index, "embedding": wire_vector(str(text), dims)}
            for index, text in enumerate(texts)
        ]
        tokens = sum(wire_tokens(str(text)) for text in texts)
        return WireReply(
            200,
            {
                "object": "list",
                "data": data,
                "model": self.deployment(request),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
        )

    def _chat(self, request: WireRequest) -> WireReply:
        body = request.body
        images = [
            part["image_url"]["url"]
            for message in body.get("messages", [])
            if isinstance(message.get("content"), list)
            for part in message["content"]
            if part.get("type") == "image_url"
        ]
        if self.flavour == "ollama" and any(not OLLAMA_IMAGE.match(url) for url in images):
            return self._error(400, "invalid image input")
        fmt = body.get("response_format") or {}
        if fmt.get("type") in ("json_schema", "json_object"):
            answer = self.facts(request) if callable(self.facts) else self.facts
            content = json.dumps(answer)
        elif images:
            content = self.description
        else:
            content = self.merged
        return WireReply(200, completion(request, content, flavour=self.flavour))


@contextmanager
def serve_openai(fake: FakeOpenAI) -> Iterator[str]:
    """Serve ``fake`` on a loopback port; yields its root URL (``http://127.0.0.1:N``)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            parts = urlsplit(self.path)
            request = WireRequest(
                self.command,
                parts.path,
                parse_qs(parts.query),
                {name.lower(): value for name, value in self.headers.items()},
                json.loads(raw) if raw else {},
            )
            reply = fake.handle(request)
            data = json.dumps(reply.body).encode()
            try:
                self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting (a timeout test)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        if fake.hold is not None:
            fake.hold.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
