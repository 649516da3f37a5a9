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

# Documented limits the fake enforces, per route (docs/gemini.md, "Request limits").
GEMINI_API_MAX_BATCH = 100  # batchEmbedContents: requests per call
VERTEX_MAX_TEXTS = 250  # :predict instances per request
VERTEX_MAX_REQUEST_TOKENS = 20_000  # :predict tokens per request
VERTEX_ONE_INSTANCE_MODELS = ("gemini-embedding-001",)  # one instance per request
MAX_TEXT_TOKENS = 2_048  # per text; longer text is truncated unless autoTruncate is false

_TOKEN = re.compile(r"\w+|[^\w\s]")


def wire_tokens(text: str) -> list[str]:
    """The fake's tokenizer: words and punctuation marks (Gemini's own is finer-grained)."""
    return _TOKEN.findall(text)


def _embedded(text: str, auto_truncate: bool | None) -> str | None:
    """The text the service embeds: its first 2,048 tokens, or None when it would refuse."""
    tokens = wire_tokens(text)
    if len(tokens) <= MAX_TEXT_TOKENS:
        return text
    if auto_truncate is False:
        return None
    return " ".join(tokens[:MAX_TEXT_TOKENS])


Json = dict[str, Any]
Reply = Callable[[httpx2.Request], httpx2.Response]


def wire_vector(text: str) -> list[float]:
    """A deterministic, deliberately non-unit vector (as a truncated embedding is)."""
    digest = hashlib.sha256(text.encode()).digest()
    return [float(byte) - 100.0 for byte in digest[:DIMS]]


def error_reply(
    status: int, grpc_status: str, message: str, headers: dict[str, str] | None = None
) -> Reply:
    body = {"error": {"code": status, "message": message, "status": grpc_status}}
    return lambda request: httpx2.Response(status, json=body, headers=headers)


def invalid(message: str) -> httpx2.Response:
    return httpx2.Response(
        400, json={"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}
    )


def generate_reply(body: Json) -> Reply:
    return lambda request: httpx2.Response(200, json=body)


def text_candidate(text: str, finish: str = "STOP") -> Json:
    return {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": finish}
        ]
    }


@dataclass
class FakeGemini:
    """Gemini's REST surface as the SDK speaks it: records requests, answers by endpoint.

    ``script`` holds one-off replies used (in order) before the default answers.
    """

    description: str = "A whiteboard photo listing the Q3 launch plan for Project Falcon."
    merged: str = "Project Falcon launches in Q3. The launch owner is Dana."
    requests: list[httpx2.Request] = field(default_factory=list)
    script: list[Reply] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        with self.lock:
            self.requests.append(request)
            scripted = self.script.pop(0) if self.script else None
        if scripted is not None:
            return scripted(request)
        body = self.body(request)
        path = request.url.path
        if path.endswith(":generateContent"):
            parts = body["contents"][0]["parts"]
            has_image = any("inlineData" in part for part in parts)
            return httpx2.Response(
                200, json=text_candidate(self.description if has_image else self.merged)
            )
        model = path.rsplit("/", 1)[-1].split(":", 1)[0]
        if "/projects/" in path:
            return self._vertex_embedding(path, model, body)
        return self._gemini_api_embedding(path, body)

    def _gemini_api_embedding(self, path: str, body: Json) -> httpx2.Response:
        if not path.endswith(":batchEmbedContents"):
            return _not_found()
        items = body["requests"]
        if len(items) > GEMINI_API_MAX_BATCH:
            return invalid(
                f"* BatchEmbedContentsRequest.requests: at most {GEMINI_API_MAX_BATCH} "
                f"requests can be in one batch, got {len(items)}"
            )
        texts = [_embedded(item["content"]["parts"][0]["text"], None) for item in items]
        return httpx2.Response(
            200, json={"embeddings": [{"values": wire_vector(str(text))} for text in texts]}
        )

    def _vertex_embedding(self, path: str, model: str, body: Json) -> httpx2.Response:
        if path.endswith(":predict"):
            instances = body["instances"]
            auto = body.get("parameters", {}).get("autoTruncate")
            texts = [instance["content"] for instance in instances]
        elif path.endswith(":batchEmbedContents"):
            items = body["requests"]
            auto = items[0].get("embedContentConfig", {}).get("autoTruncate") if items else None
            texts = [item["content"]["parts"][0]["text"] for item in items]
        elif path.endswith(":embedContent"):
            auto = body.get("embedContentConfig", {}).get("autoTruncate")
            texts = [body["content"]["parts"][0]["text"]]
        else:
            return _not_found()
        if model in VERTEX_ONE_INSTANCE_MODELS and len(texts) > 1:
            return invalid(f"{model} supports only one instance per request, got {len(texts)}")
        if len(texts) > VERTEX_MAX_TEXTS:
            return invalid(f"at most {VERTEX_MAX_TEXTS} input texts per request")
        if sum(len(wire_tokens(text)) for text in texts) > VERTEX_MAX_REQUEST_TOKENS:
            return invalid(f"at most {VERTEX_MAX_REQUEST_TOKENS} input tokens per request")
        embedded = [_embedded(text, auto) for text in texts]
        if any(text is None for text in embedded):
            return invalid(
                f"input text longer than {MAX_TEXT_TOKENS} tokens with autoTruncate false"
            )
        vectors = [wire_vector(str(text)) for text in embedded]
        if path.endswith(":embedContent"):
            return httpx2.Response(200, json={"embedding": {"values": vectors[0]}})
        if path.endswith(":batchEmbedContents"):
            return httpx2.Response(200, json={"embeddings": [{"values": v} for v in vectors]})
        return httpx2.Response(
            200, json={"predictions": [{"embeddings": {"values": v}} for v in vectors]}
        )

    @staticmethod
    def body(request: httpx2.Request) -> Json:
        decoded: Json = json.loads(request.content)
        return decoded


def _not_found() -> httpx2.Response:
    return httpx2.Response(404, json={"error": {"code": 404, "status": "NOT_FOUND"}})


@contextmanager
def serve_over_http(fake: FakeGemini, latency: float = 0.0) -> Iterator[str]:
    """Serve ``fake`` on a loopback port; yields its base URL. Every request is
    answered by ``FakeGemini.handle``, exactly as through the mock transport.

    ``latency`` (seconds) delays every answer, as a remote service would; requests
    in flight wait concurrently (bench/reembed.py simulates 50 ms)."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            request = httpx2.Request(
                self.command,
                f"http://{self.headers.get('host', 'localhost')}{self.path}",
                headers=dict(self.headers.items()),
                content=self.rfile.read(length),
            )
            if latency:
                time.sleep(latency)
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

    class Server(ThreadingHTTPServer):
        # The default listen backlog (5) makes concurrent clients wait on SYN retries.
        request_queue_size = 128
        daemon_threads = True

    server = Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
