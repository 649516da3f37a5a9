"""A function deployed with a configuration it cannot run on (here: Gemini with
neither an API key nor a project) answers every request with one small JSON
503, and tells the operator why in its log, once, without any secret."""

from __future__ import annotations

import httpx2
import pytest

from bench.cold_start import ADMIN_TOKEN, FunctionProcess

pytestmark = pytest.mark.slow


def test_a_misconfigured_function_answers_json_503_and_logs_the_reason_once() -> None:
    with FunctionProcess({"MCP_ADMIN_TOKEN": ADMIN_TOKEN}) as function:
        function.wait_listening()
        headers = {
            "authorization": f"Bearer {ADMIN_TOKEN}",
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
        }
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        with httpx2.Client(base_url=function.url, timeout=60) as http:
            answers = [
                http.post("/metaCortexMcp/mcp", json=ping, headers=headers),
                http.post("/mcp", json=ping, headers=headers),
                http.get("/healthz"),
            ]
        for answer in answers:
            assert answer.status_code == 503
            assert answer.headers["content-type"] == "application/json"
            assert answer.json() == {
                "error": {
                    "code": "unavailable",
                    "message": "the server is not configured correctly; "
                    "the operator has been told why in the logs",
                }
            }
    reasons = [line for line in function.log if "MetaCortex could not start" in line]
    assert len(reasons) == 1
    assert "GEMINI_API_KEY" in reasons[0] or "GOOGLE_CLOUD_PROJECT" in reasons[0]
    assert ADMIN_TOKEN not in "\n".join(function.log)
    assert "Traceback" not in "\n".join(function.log)
