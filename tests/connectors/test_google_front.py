"""The emulation of Google's Cloud Functions front end behaves as Google's does, in both
its shapes (a separate hop, and in-process around the app): only ``/metaCortexMcp`` and
what is under it reach the function, with the name stripped and the query kept;
everything else, for every method, is Google's 404 HTML page from the front end itself.
The function behind it here echoes what it received."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import httpx2
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.google_front import GOOGLE_404, CloudFunctionsFront, CloudFunctionsFrontEnd
from tests.oauth_support import serving


async def _echo(request: Request) -> JSONResponse:
    return JSONResponse(
        {
            "method": request.method,
            "path": request.url.path,
            "query": request.url.query,
            "host": request.headers["host"],
            "forwarded_for": request.headers.get("x-forwarded-for"),
            "cookie": request.headers.get("cookie"),
            "body": (await request.body()).decode(),
        }
    )


async def _sign_in(request: Request) -> JSONResponse:
    """What a sign-in does: set a session cookie for the function's path."""
    answer = JSONResponse({"signed_in": True})
    answer.set_cookie("session", "s3cr3t-session", path="/", httponly=True, samesite="strict")
    answer.set_cookie("scoped", "for-the-prefix", path="/metaCortexMcp", samesite="strict")
    return answer


@dataclass
class Front:
    url: str
    hop: CloudFunctionsFrontEnd | None  # None: the in-process shape


@pytest.fixture(scope="module", params=["separate hop", "in-process"])
def front(request: pytest.FixtureRequest) -> Iterator[Front]:
    function = Starlette(
        routes=[
            Route("/sign-in", _sign_in, methods=["POST"]),
            Route("/{path:path}", _echo, methods=["GET", "POST", "OPTIONS"]),
        ]
    )
    if request.param == "in-process":
        with serving(CloudFunctionsFront(function, strip=True)) as url:
            yield Front(url, None)
        return
    with serving(function) as backend:
        hop = CloudFunctionsFrontEnd(backend)
        with serving(hop) as url:
            yield Front(url, hop)


@pytest.mark.parametrize("method", ["GET", "POST", "OPTIONS", "HEAD"])
@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/.well-known/oauth-authorization-server",
        "/.well-known/oauth-protected-resource/metaCortexMcp/mcp",
        "/register",
        "/mcp",
        "/metaCortexMcpX/mcp",
        "/metacortexmcp/mcp",
    ],
)
def test_a_path_outside_the_function_gets_googles_404_page_for_every_method(
    front: Front, method: str, path: str
) -> None:
    answer = httpx2.request(method, front.url + path, headers={"origin": "https://claude.ai"})
    assert answer.status_code == 404
    assert answer.headers["content-type"] == "text/html; charset=UTF-8"
    assert "access-control-allow-origin" not in answer.headers
    if method != "HEAD":
        assert answer.content == GOOGLE_404
    if front.hop is not None:
        assert front.hop.refused[-1] == f"{method} {path}"


@pytest.mark.parametrize(
    ("path", "delivered"),
    [
        ("/metaCortexMcp/mcp", "/mcp"),
        ("/metaCortexMcp", "/"),
        ("/metaCortexMcp/", "/"),
        ("/metaCortexMcp/.well-known/openid-configuration", "/.well-known/openid-configuration"),
        ("/metaCortexMcp/metaCortexMcp/mcp", "/metaCortexMcp/mcp"),
    ],
)
def test_the_function_receives_its_paths_with_the_function_name_stripped(
    front: Front, path: str, delivered: str
) -> None:
    answer = httpx2.post(front.url + path + "?a=1&b=%2F", content=b"body")
    assert answer.status_code == 200
    echoed = answer.json()
    assert echoed["path"] == delivered
    assert echoed["query"] == "a=1&b=%2F"
    assert echoed["body"] == "body"
    assert echoed["host"] == front.url.removeprefix("http://")  # the client's Host is kept
    if front.hop is not None:
        assert echoed["forwarded_for"] == "127.0.0.1"


def test_cookies_pass_per_request_and_the_front_end_keeps_none(front: Front) -> None:
    """Google's front end is no browser: a Set-Cookie goes back to the caller who got it,
    a Cookie header goes to the function with the request that carries it, and nothing
    is remembered between requests. (An emulation keeping a cookie jar signed every later
    caller in with the first one's session.)"""
    with httpx2.Client(base_url=front.url) as owner:
        signed_in = owner.post("/metaCortexMcp/sign-in")
        assert signed_in.status_code == 200
        assert {cookie.name for cookie in owner.cookies.jar} == {"session", "scoped"}
        own = owner.get("/metaCortexMcp/consent").json()
    stranger = httpx2.get(front.url + "/metaCortexMcp/consent").json()
    again = httpx2.get(front.url + "/metaCortexMcp/consent", headers={"cookie": "a=1"}).json()

    assert own["cookie"] is not None
    assert "session=s3cr3t-session" in own["cookie"]
    assert stranger["cookie"] is None
    assert again["cookie"] == "a=1"
