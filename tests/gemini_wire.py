"""Gemini's REST API faked at the HTTP wire: shared by the provider tests (through an
``httpx2.MockTransport``) and the Cloud Functions end-to-end test (through a real
loopback HTTP server that ``GOOGLE_GEMINI_BASE_URL`` points the SDK at)."""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx2

DIMS = 8

Json = dict[str, Any]
Reply = Callable[[httpx2.Request], httpx2.Response]


def wire_vector(text: str) -> list[float]:
    """A deterministic, deliberately non-unit vector (as a truncated embedding is)."""
    digest = hashlib.sha256(text.encode()).digest()
    return [float(byte) - 100.0 for byte in digest[:DIMS]]


def error_reply(status: int, grpc_status: str, message: str) -> Reply:
    body = {"error": {"code": status, "message": message, "status": grpc_status}}
    return lambda request: httpx2.Response(status, json=body)


def generate_reply(body: Json) -> Reply:
    return lambda request: httpx2.Response(200, json=body)


def text_candidate(text: str, finish: str = "STOP") -> Json:
    return {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": finish}
        ]
    }


# Documented request limits per route (docs/gemini.md has the sources):
# Vertex AI: gemini-embedding-001 takes one instance per request; other models at most
# 250 texts per request. The Gemini API: batchEmbedContents takes at most 100 requests.
VERTEX_ONE_TEXT_MODELS = ("gemini-embedding-001",)
VERTEX_MAX_TEXTS = 250
VERTEX_MAX_REQUEST_TOKENS = 20_000
MAX_TEXT_TOKENS = 2_048  # per text; longer is truncated unless autoTruncate is false
GEMINI_API_MAX_BATCH = 100

_TOKEN = re.compile(r"\w+|[^\w\s]")


def wire_tokens(text: str) -> int:
    """The fake's token count: words and punctuation marks (Gemini's is finer-grained)."""
    return len(_TOKEN.findall(text))


def embedded_texts(body: Json) -> list[str]:
    """The texts of an embedding request, whichever of the three request shapes it has."""
    if "instances" in body:
        return [str(instance["content"]) for instance in body["instances"]]
    items = body.get("requests") or [body]
    return [str(item["content"]["parts"][0]["text"]) for item in items if "content" in item]


def _auto_truncate(body: Json) -> object:
    if "parameters" in body:
        return body["parameters"].get("autoTruncate")
    items = body.get("requests") or [body]
    return items[0].get("embedContentConfig", {}).get("autoTruncate") if items else None


def limit_error(request: httpx2.Request, body: Json) -> httpx2.Response | None:
    """The 400 the real service answers for a request over its route's limits, or None."""
    path = request.url.path
    model = path.rsplit("/", 1)[-1].split(":", 1)[0]
    count = len(body.get("requests") or body.get("instances") or [body.get("content")])
    if request.url.host.endswith("aiplatform.googleapis.com"):
        if model.startswith(VERTEX_ONE_TEXT_MODELS) and count > 1:
            message = f"Only one instance is allowed per request for {model}; got {count}."
        elif count > VERTEX_MAX_TEXTS:
            message = f"At most {VERTEX_MAX_TEXTS} instances are allowed per request."
        elif sum(wire_tokens(t) for t in embedded_texts(body)) > VERTEX_MAX_REQUEST_TOKENS:
            message = f"At most {VERTEX_MAX_REQUEST_TOKENS} input tokens per request."
        elif _auto_truncate(body) is False and any(
            wire_tokens(t) > MAX_TEXT_TOKENS for t in embedded_texts(body)
        ):
            message = f"An input text is longer than {MAX_TEXT_TOKENS} tokens."
        else:
            return None
    elif path.endswith(":batchEmbedContents") and count > GEMINI_API_MAX_BATCH:
        message = f"at most {GEMINI_API_MAX_BATCH} requests can be in one batch"
    else:
        return None
    error = {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}
    return httpx2.Response(400, json={"error": error})


@dataclass
class FakeGemini:
    """Gemini's REST surface as the SDK speaks it: records requests, answers by endpoint.

    It refuses, as the real routes do, requests over their documented limits
    (``limit_error``). ``script`` holds one-off replies used (in order) before the
    default answers. ``latency`` (seconds) delays every answer, for benchmarks.
    Safe to call from several threads at once.
    """

    description: str = "A whiteboard photo listing the Q3 launch plan for Project Falcon."
    merged: str = "Project Falcon launches in Q3. The launch owner is Dana."
    requests: list[httpx2.Request] = field(default_factory=list)
    script: list[Reply] = field(default_factory=list)
    latency: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        if self.latency:
            time.sleep(self.latency)  # the simulated round trip (benchmarks only)
        with self._lock:
            self.requests.append(request)
            scripted = self.script.pop(0) if self.script else None
        if scripted is not None:
            return scripted(request)
        body = self.body(request)
        refused = limit_error(request, body)
        if refused is not None:
            return refused
        path = request.url.path
        if path.endswith(":batchEmbedContents"):
            return httpx2.Response(
                200,
                json={
                    "embeddings": [
                        {"values": wire_vector(item["content"]["parts"][0]["text"])}
                        for item in body["requests"]
                    ]
                },
            )
        if path.endswith(":embedContent"):
            text = body["content"]["parts"][0]["text"]
            return httpx2.Response(200, json={"embedding": {"values": wire_vector(text)}})
        if path.endswith(":predict") and "instances" in body:
            predictions = [
                {"embeddings": {"values": wire_vector(text)}} for text in embedded_texts(body)
            ]
            return httpx2.Response(200, json={"predictions": predictions})
        if path.endswith(":generateContent"):
            parts = body["contents"][0]["parts"]
            has_image = any("inlineData" in part for part in parts)
            return httpx2.Response(
                200, json=text_candidate(self.description if has_image else self.merged)
            )
        return httpx2.Response(404, json={"error": {"code": 404, "status": "NOT_FOUND"}})

    @staticmethod
    def body(request: httpx2.Request) -> Json:
        decoded: Json = json.loads(request.content)
        return decoded


@contextmanager
def serve_over_http(fake: FakeGemini) -> Iterator[str]:
    """Serve ``fake`` on a loopback port; yields its base URL. Every request is
    answered by ``FakeGemini.handle``, exactly as through the mock transport."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            request = httpx2.Request(
                self.command,
                f"http://{self.headers.get('host', 'localhost')}{self.path}",
                headers=dict(self.headers.items()),
                content=self.rfile.read(length),
            )
            with lock:
                response = fake.handle(request)
            body = response.content
            self.send_response(response.status_code)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_POST = _answer
        do_GET = _answer

        def log_message(self, format: str, *args: Any) -> None:
            return

    lock = threading.Lock()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
