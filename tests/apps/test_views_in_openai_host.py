"""The views in a host of ChatGPT's older Apps SDK contract (issue 41 §3: there a view
showed only "Waiting for the search…", reading nothing from ``window.openai``).

Counterpart: ``host/openai_host.mjs``, a host doing what OpenAI's Apps SDK
documentation says ChatGPT does (``window.openai`` with ``toolInput``, ``toolOutput``,
``toolResponseMetadata`` and ``theme``, ``openai:set_globals``, ``callTool`` for tools
marked ``openai/widgetAccessible``, ``notifyIntrinsicHeight``) and no MCP Apps bridge,
with the TypeScript MCP SDK client speaking to a real MetaCortex server, in Debian's
chromium. OpenAI publishes no host of its own to test against. Each test also fails on
a request leaving the page and on any console or page error (``driving.hosted``).
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from metacortex.service import Access
from tests.apps.driving import hosted
from tests.apps.host_support import Live


def test_the_search_view_shows_the_tool_output_window_openai_holds(
    browser: Any, live: Live
) -> None:
    with hosted(browser, live) as host:
        opened = host.open_in_apps_sdk_host(
            "owner", "search_context", {"query": "staging database"}
        )
        assert opened["uri"] == "ui://metacortex/search.html"
        view = host.view
        expect(view.locator("#query")).to_have_text("For “staging database”")
        card = view.locator("article.card").first
        expect(card).to_contain_text("db-staging-3")
        expect(card).to_contain_text("by Owner via default")
        expect(view.locator("#status")).to_contain_text("found in space default.")
        # Nobody answered its ui/initialize: the view stayed on window.openai.
        events = host.page.evaluate("host.events")
        assert {"event": "mcp-apps", "method": "ui/initialize"} in events


@pytest.mark.parametrize("answer", ["result", "text"])
def test_opening_a_card_runs_fetch_context_through_window_openai_call_tool(
    browser: Any, live: Live, answer: str
) -> None:
    """``callTool`` resolves with the tool's result, or (OpenAI's older typings) with
    ``{ result }`` holding its text: the view reads either."""
    with hosted(browser, live) as host:
        host.open_in_apps_sdk_host(
            "owner", "search_context", {"query": "staging database"}, answer=answer
        )
        assert host.open_the_first_card() == [("fetch_context", "owner", "ok")]
        assert {"event": "callTool", "tool": "fetch_context"} in host.page.evaluate("host.events")


@pytest.mark.parametrize("answer", ["result", "text"])
def test_a_refusal_through_call_tool_shows_the_tool_s_own_message(
    browser: Any, live: Live, answer: str
) -> None:
    """The viewer may only read: a tool it is not offered is not called at all, and a
    refusal by the server (a memory that does not exist) reaches the view with the tool's
    own words, whichever shape callTool answers in."""
    with hosted(browser, live) as host:
        host.open_in_apps_sdk_host(
            "viewer", "fetch_context", {"id": live.seeded.new}, answer=answer
        )
        expect(host.view.locator(".text")).to_contain_text("db-staging-3")
        assert host.view.locator("button:not(.link)").all_inner_texts() == []
        unoffered = host.frame.evaluate(
            """() => bridge.call("save_context", {content: "Not allowed.", space: "default"})
                 .then(() => "saved", (e) => e.message)"""
        )
        assert unoffered == "save_context is not marked openai/widgetAccessible"
        error = host.frame.evaluate(
            """() => bridge.call("fetch_context", {id: "01nosuchmemory0000000000aa"})
                 .then(() => "fetched", (e) => e.message)"""
        )
        assert "01nosuchmemory0000000000aa" in error


def test_the_memory_view_corrects_a_memory_through_call_tool(browser: Any, live: Live) -> None:
    memory = live.service.save(Access.admin(), content="The standup is at 09:30.", topic="team")[
        "item"
    ]["id"]
    with hosted(browser, live) as host:
        host.open_in_apps_sdk_host("owner", "fetch_context", {"id": memory})
        view = host.view
        expect(view.locator(".text")).to_have_text("The standup is at 09:30.")
        view.get_by_role("button", name="Correct").click()
        view.get_by_label("Corrected text").fill("The standup is at 09:45.")
        view.get_by_role("button", name="Save the correction").click()
        expect(view.locator("#status")).to_contain_text("Corrected: the new memory is")
    old = live.service.store.get(memory, space="default")
    assert old is not None
    assert old.branch_state.value == "deprecated"
    new = live.service.store.get(old.superseded_by or "", space="default")
    assert new is not None
    assert new.content == "The standup is at 09:45."


def test_the_view_follows_window_openai_s_theme_and_says_its_height(
    browser: Any, live: Live
) -> None:
    with hosted(browser, live) as host:
        host.open_in_apps_sdk_host("owner", "list_spaces", {}, theme="dark")
        root = host.view.locator("html")
        expect(root).to_have_attribute("data-theme", "dark")
        expect(host.view.locator("#spaces h2")).to_have_text(["Default (default)"])
        host.theme("light")
        expect(root).to_have_attribute("data-theme", "light")
        height: int = host.frame.evaluate(
            "Math.ceil(document.documentElement.getBoundingClientRect().height)"
        )
        expect(host.page.locator("iframe")).to_have_css("height", f"{height}px")


def test_the_graph_view_offers_no_topic_where_the_host_cannot_read_resources(
    browser: Any, live: Live
) -> None:
    with hosted(browser, live) as host:
        host.open_in_apps_sdk_host("owner", "related_context", {"id": live.seeded.new})
        expect(host.view.locator("svg circle")).to_have_count(2)
        expect(host.view.locator("#edges")).to_contain_text("supersedes")
        expect(host.view.locator("#topic-form")).to_be_hidden()


def test_where_the_host_gives_both_the_view_acts_through_mcp_apps_once_answered(
    browser: Any, live: Live
) -> None:
    """ChatGPT gives window.openai beside the MCP Apps bridge: once the MCP Apps host
    answered ui/initialize, the view's calls go through it, not callTool (here one
    that never answers). Counterpart: the ext-apps AppBridge host (host.mjs)."""
    with hosted(browser, live) as host:
        host.open("owner", "search_context", {"query": "staging database"}, with_openai=True)
        assert host.open_the_first_card() == [("fetch_context", "owner", "ok")]
        assert host.frame.evaluate("window.openaiCalls || []") == []
