"""The views in a real MCP Apps host: the ext-apps package's own AppBridge (npm) in
Debian's chromium, talking to a real MetaCortex server through the TypeScript MCP SDK
client (see host_support.py); every test also fails on a request leaving the page for
another origin, any request from the view's frame, and any console or page error."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.apps.driving import hosted
from tests.apps.host_support import Live


def test_the_search_view_is_linked_initialized_and_shows_the_tool_result(
    browser: Any, live: Live
) -> None:
    with hosted(browser, live) as host:
        opened = host.open("owner", "search_context", {"query": "staging database"})
        assert opened["uri"] == "ui://metacortex/search.html"
        assert opened["mimeType"] == "text/html;profile=mcp-app"
        assert opened["toolMeta"] == {
            "ui": {"resourceUri": "ui://metacortex/search.html"},
            "openai/outputTemplate": "ui://metacortex/search.html",
        }
        csp = opened["resourceMeta"]["ui"]["csp"]
        assert csp == {
            "connectDomains": [],
            "resourceDomains": [],
            "frameDomains": [],
            "baseUriDomains": [],
        }
        events = host.page.evaluate("host.events")
        assert events[0] == {
            "event": "initialized",
            "view": {"name": "metacortex-search", "version": "1"},
        }
        # tool-input reached the view, then tool-result.
        expect(host.view.locator("#query")).to_have_text("For “staging database”")
        card = host.view.locator("article.card").first
        expect(card).to_contain_text("db-staging-3")
        expect(card).to_contain_text("space default")
        expect(card).to_contain_text("by Owner via default")
        expect(card).to_contain_text("score ")
        expect(card).to_contain_text("supersedes: The staging database moved to db-staging-2")


def test_opening_a_card_calls_fetch_context_from_the_view_and_shows_the_memory(
    browser: Any, live: Live
) -> None:
    with hosted(browser, live) as host:
        host.open("owner", "search_context", {"query": "staging database"})
        assert host.open_the_first_card() == [("fetch_context", "owner", "ok")]


def test_a_cancelled_search_shows_the_cancel_and_its_reason_instead_of_searching(
    browser: Any, live: Live
) -> None:
    """Issue 41 §3: after ``ui/notifications/tool-cancelled`` the view said "Searching…"
    for good."""
    with hosted(browser, live) as host:
        before = len(live.tool_calls())
        host.cancel("owner", "search_context", {"query": "staging database"}, "You declined it")
        expect(host.view.locator("#query")).to_have_text("For “staging database”")
        expect(host.view.locator("#status")).to_have_text(
            "Cancelled: You declined it. Nothing came back."
        )
        expect(host.view.locator("article.card")).to_have_count(0)
        assert host.page.evaluate("host.events")[-1] == {
            "event": "cancel-sent",
            "tool": "search_context",
        }
    assert live.tool_calls()[before:] == []  # the call never ran


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("fetch_context", {"id": "01jzzzzzzzzzzzzzzzzzzzzzzz"}),
        ("save_context", {"content": "A memory the person declined to save."}),
        ("list_spaces", {}),
        ("create_document", {"content": "# Declined", "media_type": "text/markdown"}),
        ("related_context", {"id": "01jzzzzzzzzzzzzzzzzzzzzzzz"}),
    ],
)
def test_every_other_view_shows_a_cancel_without_a_reason_too(
    browser: Any, live: Live, tool: str, arguments: dict[str, Any]
) -> None:
    with hosted(browser, live) as host:
        host.cancel("owner", tool, arguments, None)
        expect(host.view.locator("#status")).to_have_text("Cancelled. Nothing came back.")


def test_the_memory_view_corrects_a_memory_by_saving_and_deprecating_through_the_tools(
    browser: Any, live: Live
) -> None:
    with hosted(browser, live) as host:
        host.open("owner", "fetch_context", {"id": live.seeded.backups})
        view = host.view
        expect(view.locator(".text")).to_have_text("Staging backups run nightly at 02:00 UTC.")
        view.get_by_role("button", name="Correct").click()
        view.get_by_label("Corrected text").fill("Staging backups run nightly at 03:00 UTC.")
        view.get_by_role("button", name="Save the correction").click()
        expect(view.locator("#status")).to_contain_text("Corrected: the new memory is")
        expect(view.locator(".meta").first).to_contain_text("deprecated")
    old = live.service.store.get(live.seeded.backups, space="default")
    assert old is not None
    assert old.branch_state.value == "deprecated"
    assert old.supersession_reason is not None
    assert old.supersession_reason.value == "corrected"
    new = live.service.store.get(old.superseded_by or "", space="default")
    assert new is not None
    assert new.content == "Staging backups run nightly at 03:00 UTC."


def test_the_memory_view_promotes_a_draft_through_promote_context(browser: Any, live: Live) -> None:
    with hosted(browser, live) as host:
        host.open("owner", "fetch_context", {"id": live.seeded.draft})
        view = host.view
        expect(view.locator(".meta").first).to_contain_text("wip")
        before = len(live.tool_calls())
        view.get_by_role("button", name="Promote").click()
        expect(view.locator("#status")).to_have_text("Promoted: the draft is active.")
        expect(view.locator(".meta").first).not_to_contain_text("wip")
        expect(view.get_by_role("button", name="Promote")).to_have_count(0)
        calls = live.tool_calls()[before:]
        assert [(c["tool_name"], c["client_id"], c["status"]) for c in calls] == [
            ("promote_context", "owner", "ok"),
            ("fetch_context", "owner", "ok"),
        ]
    promoted = live.service.store.get(live.seeded.draft, space="default")
    assert promoted is not None
    assert promoted.branch_state.value == "active"


def test_the_spaces_view_switches_the_default_and_the_next_call_lands_there(
    browser: Any, live: Live
) -> None:
    with hosted(browser, live) as host:
        host.open("member", "list_spaces", {})
        view = host.view
        expect(view.locator("#spaces h2")).to_have_text(["Default (default)", "Team"])
        # Only the spaces that are not the default offer it.
        expect(view.get_by_role("button")).to_have_text(["Make Team the default"])
        view.get_by_role("button", name="Make Team the default").click()
        expect(view.locator("#status")).to_have_text(
            "Team is now the default: tools act there unless told another."
        )
        expect(view.locator("#spaces h2")).to_have_text(["Default", "Team (default)"])
        expect(view.get_by_role("button")).to_have_text(["Make Default the default"])
        # The model's next call, naming no space, on the same connection.
        saved = host.page.evaluate(
            """() => host.client.callTool({name: "save_context",
                 arguments: {content: "The team retro is on Fridays."}})"""
        )
    assert saved["structuredContent"]["item"]["metadata"]["space"] == "team"
    calls = [c for c in live.tool_calls() if c["client_id"] == "member"]
    assert [(c["tool_name"], c["status"]) for c in calls][-2:] == [
        ("set_default_space", "ok"),
        ("save_context", "ok"),
    ]
    [(_, record)] = [
        (key, data)
        for key, data in live.service.store.auth_list("client_profile")
        if key == "member"
    ]
    assert record["entry"]["defaultSpace"] == "team"


def test_a_read_only_credential_s_views_offer_no_write_action(browser: Any, live: Live) -> None:
    with hosted(browser, live) as host:
        host.open("viewer", "fetch_context", {"id": live.seeded.new})
        expect(host.view.locator(".text")).to_contain_text("db-staging-3")
        assert host.view.locator("button:not(.link)").all_inner_texts() == []

        # A draft it may read, in a space it may only read: no Promote.
        host.open("viewer", "fetch_context", {"id": live.seeded.draft})
        expect(host.view.locator(".text")).to_contain_text("Draft: move the staging backups")
        assert host.view.locator("button:not(.link)").all_inner_texts() == []

        host.open("viewer", "search_context", {"query": "staging database"})
        host.view.get_by_role("button", name="Open").first.click()
        expect(host.view.locator("#opened")).to_contain_text("db-staging-3")
        names = set(host.view.locator("button:not(.link)").all_inner_texts())
        assert not names & {"Correct", "Deprecate", "Save", "Add"}, names

        # Not offered save_context at all (it may write nowhere): no host opens the Save
        # view for it, and a call made anyway is refused.
        listed = host.page.evaluate(
            "async () => (await host.client.listTools()).tools.map((tool) => tool.name)"
        )
        assert "fetch_context" in listed
        assert not {"save_context", "deprecate_context", "create_document"} & set(listed)
        called = host.page.evaluate(
            "async () => await host.client.callTool("
            "{name: 'save_context', arguments: {content: 'Should not be saved.'}})"
        )
        assert called["isError"] is True
        assert "space 'default'" in called["content"][0]["text"]

        # Two spaces, and no way to make the other the default.
        host.open("viewer", "list_spaces", {})
        expect(host.view.locator("#spaces h2")).to_have_text(["Default (default)", "Team"])
        expect(host.view.locator("#spaces")).to_contain_text("may read only")
        expect(host.view.get_by_role("button")).to_have_count(0)
    refused = [c for c in live.tool_calls() if c["tool_name"] == "save_context"][-1]
    assert (refused["client_id"], refused["status"]) == ("viewer", "error")


def test_the_save_view_saves_from_its_form_and_shows_a_duplicate_as_such(
    browser: Any, live: Live
) -> None:
    with hosted(browser, live) as host:
        host.open("owner", "save_context", {"content": "The team offsite is in Porto in June."})
        view = host.view
        expect(view.locator("#status")).to_have_text("Saved.")
        expect(view.locator("#saved")).to_contain_text("Porto in June")
        view.get_by_label("What to remember").fill("The team offsite is in Porto in June.")
        expect(view.get_by_label("Space")).to_have_value("default")
        view.get_by_role("button", name="Save", exact=True).click()
        expect(view.locator("#status")).to_contain_text("Already saved")
        expect(view.locator("#saved .tag").first).to_have_text("duplicate")


def test_the_upload_view_sends_a_picked_file_to_create_document_and_lists_its_passages(
    browser: Any, live: Live
) -> None:
    with hosted(browser, live) as host:
        host.open(
            "owner",
            "create_document",
            {
                "content": "# Plan\n\nShip the views.",
                "media_type": "text/markdown",
                "topic": "work",
            },
        )
        view = host.view
        expect(view.locator("#status")).to_have_text("Added.")
        view.get_by_label("File (text, Markdown, CSV, HTML, PDF or Word)").set_input_files(
            {
                "name": "trip.md",
                "mimeType": "text/markdown",
                "buffer": b"# Trip\n\nWe fly to Lisbon on 3 May.\n\n## Hotel\n\nNear the river.",
            }
        )
        view.get_by_label("Topic").fill("travel")
        view.get_by_role("button", name="Add").click()
        expect(view.locator("#document h2").first).to_have_text("Trip")
        passages = view.get_by_role("region", name="Passages")
        expect(passages).to_contain_text("We fly to Lisbon on 3 May.")
        expect(passages).to_contain_text("Near the river.")


def test_the_graph_view_draws_a_memory_s_and_a_topic_s_neighbourhood_in_inline_svg(
    browser: Any, live: Live
) -> None:
    with hosted(browser, live) as host:
        host.open("owner", "related_context", {"id": live.seeded.new})
        view = host.view
        expect(view.locator("svg circle")).to_have_count(2)
        expect(view.locator("#edges")).to_contain_text("supersedes")
        view.get_by_label("A topic's links").fill("infra")
        view.get_by_role("button", name="Show the topic").click()
        expect(view.locator("#status")).to_contain_text("memories,")
        assert view.locator("svg circle").count() >= 3


def test_the_spaces_view_shows_each_space_with_the_credential_s_level(
    browser: Any, live: Live
) -> None:
    with hosted(browser, live) as host:
        host.open("owner", "who_am_i", {})
        expect(host.view.locator("#who")).to_contain_text("with the credential owner")
        expect(host.view.locator("#spaces")).to_contain_text("may read and write")


def test_switching_the_host_s_theme_restyles_the_view_with_its_variables(
    browser: Any, live: Live
) -> None:
    with hosted(browser, live) as host:
        host.open("owner", "search_context", {"query": "staging"}, theme="light")
        root = host.view.locator("html")
        expect(root).to_have_attribute("data-theme", "light")
        expect(root).to_have_css("background-color", "rgb(255, 255, 255)")
        host.theme("dark")
        expect(root).to_have_attribute("data-theme", "dark")
        expect(root).to_have_css("background-color", "rgb(17, 17, 19)")
        expect(root).to_have_css("color", "rgb(243, 243, 245)")


def test_the_host_follows_the_view_s_size_changes(browser: Any, live: Live) -> None:
    with hosted(browser, live) as host:
        host.open("owner", "search_context", {"query": "staging database"})
        frame = host.page.locator("iframe")

        def view_height() -> int:
            height: int = host.frame.evaluate(
                "Math.ceil(document.documentElement.getBoundingClientRect().height)"
            )
            return height

        def settled() -> None:
            expect(frame).to_have_css("height", f"{view_height()}px")

        settled()
        wide = view_height()
        host.page.set_viewport_size({"width": 390, "height": 844})
        host.page.wait_for_function(
            "wide => host.sizes.length && host.sizes[host.sizes.length - 1] > wide", arg=wide
        )
        settled()
        sizes: list[int] = host.page.evaluate("host.sizes")
        assert sizes[-1] > wide


def test_a_request_from_the_view_is_refused_by_its_csp(browser: Any, live: Live) -> None:
    with hosted(browser, live) as host:
        host.open("owner", "search_context", {"query": "staging"})
        with host.page.expect_console_message(lambda m: "Content Security Policy" in m.text):
            host.frame.evaluate("fetch('https://cdn.example.com/x.js').catch(() => null)")
        assert host.foreign == []
        host.problems.clear()  # the refusal this test provoked


def test_a_view_navigating_to_another_origin_is_caught_by_the_host(
    browser: Any, live: Live
) -> None:
    # The CSP governs fetches and subresources, not where the frame navigates.
    with hosted(browser, live) as host:
        host.open("owner", "search_context", {"query": "staging"})
        with host.page.expect_event("requestfailed"):
            host.frame.evaluate("location.href = 'https://elsewhere.example.com/'")
        assert host.foreign == ["GET https://elsewhere.example.com/ (from about:srcdoc)"]
        host.foreign.clear()  # the request this test provoked
        host.problems.clear()
