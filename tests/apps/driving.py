"""One browser page holding the test host, and what it saw leave the page."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from playwright.sync_api import expect

from tests.apps.host_support import Live


@dataclass
class Host:
    page: Any
    live: Live
    # Requests the host page did not make itself to its own server or MetaCortex:
    # anything from the view's frame, anything to a third origin (aborted).
    foreign: list[str] = field(default_factory=list)
    # Console errors and page errors (a CSP refusal is one), from the host or the view.
    problems: list[str] = field(default_factory=list)

    def open(
        self,
        credential: str,
        tool: str,
        arguments: dict[str, Any],
        theme: str = "light",
        *,
        with_openai: bool = False,
    ) -> dict[str, Any]:
        """What a host does when the model calls ``tool``: the view has the result.
        ``with_openai``: the frame has a ``window.openai`` too, as in ChatGPT."""
        url = self.live.page_url(credential) + ("&openai=1" if with_openai else "")
        return self._on(url, "host.open(name, args, theme)", tool, arguments, theme)

    def open_in_apps_sdk_host(
        self,
        credential: str,
        tool: str,
        arguments: dict[str, Any],
        theme: str = "light",
        *,
        answer: str = "result",
    ) -> dict[str, Any]:
        """The same in the host of ChatGPT's older Apps SDK contract (``window.openai``):
        the view has the tool's output. ``answer``: what its ``callTool`` resolves with,
        the tool's ``result`` itself or its ``text`` (``{ result }``)."""
        url = self.live.page_url(credential, "openai-host.html") + f"&answer={answer}"
        return self._on(url, "host.open(name, args, theme)", tool, arguments, theme)

    def cancel(
        self,
        credential: str,
        tool: str,
        arguments: dict[str, Any],
        reason: str | None,
        theme: str = "light",
    ) -> dict[str, Any]:
        """What a host does when the model's call of ``tool`` is cancelled before it ran:
        the view has the input, then ``ui/notifications/tool-cancelled``, and no result."""
        call = "host.cancel(name, args, theme, reason)"
        return self._on(self.live.page_url(credential), call, tool, arguments, theme, reason)

    def _on(self, url: str, call: str, *args: Any) -> dict[str, Any]:
        """``call`` on the host page at ``url`` once it is ready (``args``: name, args,
        theme and what else ``call`` names)."""
        self.page.goto(url)
        self.page.wait_for_function("() => window.host && window.host.ready")
        done: dict[str, Any] = self.page.evaluate(
            f"([name, args, theme, reason]) => {call}", [*args, None][:4]
        )
        return done

    def open_the_first_card(self) -> list[tuple[str, str, str]]:
        """In the search view of the seeded "staging database": Open on the first card,
        the memory shown; the tool calls this made (tool, credential, status)."""
        before = len(self.live.tool_calls())
        self.view.get_by_role("button", name="Open").first.click()
        opened = self.view.locator("#opened")
        expect(opened).to_contain_text("the old one is read-only.")
        expect(opened).to_contain_text("Memory " + self.live.seeded.new)
        calls = self.live.tool_calls()[before:]
        return [(c["tool_name"], c["client_id"], c["status"]) for c in calls]

    @property
    def view(self) -> Any:
        """Locators inside the view's iframe."""
        return self.page.frame_locator("iframe")

    @property
    def frame(self) -> Any:
        """The view's frame, to evaluate in."""
        frames = [f for f in self.page.frames if f != self.page.main_frame]
        assert len(frames) == 1, [f.url for f in frames]
        return frames[0]

    def theme(self, theme: str) -> None:
        self.page.evaluate("theme => host.theme(theme)", theme)


@contextmanager
def hosted(browser: Any, live: Live, **context: Any) -> Iterator[Host]:
    """A fresh context and page on the test host; fails the test on anything foreign."""
    made = browser.new_context(**{"viewport": {"width": 1280, "height": 800}, **context})
    page = made.new_page()
    host = Host(page, live)
    own = (live.host_url + "/", live.server_url + "/")

    def route(intercepted: Any) -> None:
        request = intercepted.request
        from_host = request.frame == page.main_frame
        if from_host and request.url.startswith(own):
            intercepted.continue_()
            return
        host.foreign.append(f"{request.method} {request.url} (from {request.frame.url})")
        intercepted.abort()

    def console(message: Any) -> None:
        # The TS SDK client opens its optional GET stream; a stateless server answers
        # 405, as Streamable HTTP allows, and Chromium logs that as an error.
        stream_refused = "status of 405" in message.text and message.location.get(
            "url", ""
        ).startswith(live.server_url)
        if message.type == "error" and not stream_refused:
            host.problems.append(f"console {message.type}: {message.text}")

    made.route("**/*", route)
    page.on("console", console)
    page.on("pageerror", lambda error: host.problems.append(f"page error: {error}"))
    try:
        yield host
        assert host.foreign == [], host.foreign
        assert host.problems == [], host.problems
    finally:
        made.close()
