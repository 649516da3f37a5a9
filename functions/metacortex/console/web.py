"""The console's routes and its sign-in, access and CSRF checks.

The sign-in is ``metacortex.owner``'s: with OAuth on, the authorization server's
``OwnerWeb`` (one rate limiter, one set of ``/owner`` routes); without it, the
console mounts its own. The owner and people the owner invited sign in; each
request's access is built once here (``base.caller_access``) and read by the pages
(``base.access_for``). The pages under ``OWNER_PAGES`` (clients, erase, activity,
export) are the owner's alone: a person gets a page saying so (403).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from metacortex.access.rules import no_space_message
from metacortex.console import (
    activity,
    adding,
    backup,
    browse,
    bulk,
    client_page,
    clients,
    consolidate,
    curate,
    documents,
    erase,
    graph,
    history_import,
    people_page,
    record,
    relating,
    relocate,
    search,
    spaces_page,
    undoing,
)
from metacortex.console.base import (
    HERE,
    HOME,
    SCRIPT,
    STYLESHEET,
    ConsoleBase,
    caller_access,
    keep_access,
    text,
)
from metacortex.console.switcher import ALL_SPACES, carried_space, keep_all_spaces
from metacortex.errors import Forbidden, NotFound
from metacortex.kernel.routes import FUNCTION_PREFIX
from metacortex.owner import Session

Handler = Callable[[ConsoleBase, Request, Session], Awaitable[Response]]
# Pages only the owner may open (paths under /console): every client and grant, erasure,
# every space's activity, the whole store's export, spaces and people; and the owner's
# actions on a memory (moving it to another space).
OWNER_PAGES: Final = (
    "/clients",
    "/erase",
    "/activity",
    "/backup",
    "/export",
    "/spaces",
    "/people",
)
OWNER_ACTIONS: Final = ("/space",)


class Console(ConsoleBase):
    """The memory console of one app."""

    # -------------------------------------------------------------- routes
    def _page(
        self, handler: Handler, *, owner_only: bool = False
    ) -> Callable[[Request], Awaitable[Response]]:
        """Only for a signed-in caller (``owner_only``: the owner); a POST must carry the
        session's CSRF token."""

        async def endpoint(request: Request) -> Response:
            caller = await self.owner.caller(request)
            if caller is None:
                if request.method != "GET":
                    return await self.owner.sign_in_page(
                        request,
                        self.url(request, HOME),
                        error="Your session ended. Sign in again, then repeat the change.",
                        status_code=403,
                    )
                here = self.owner.url(request, request.url.path)
                if request.url.query:
                    here += "?" + request.url.query
                return await self.owner.sign_in_page(request, here)
            session = caller.session
            asked = carried_space(request)
            shown_all = asked == ALL_SPACES and caller.is_owner
            access = caller_access(caller, None if shown_all else asked)
            keep_access(request, access)
            keep_all_spaces(request, shown_all)
            if owner_only and not caller.is_owner:
                refusal = Forbidden(
                    "This page is the owner's: only the owner of this server sees every "
                    "client, manages spaces and people, erases memories, moves them between "
                    "spaces, reads the activity of every space and exports the whole store. "
                    "Your memories are under Memories and Search."
                )
                return self.refused(request, session, refusal, "This page is the owner's")
            if asked is not None and asked not in access.levels and not shown_all:
                return self.refused(
                    request, session, NotFound(no_space_message(asked)), "No such space"
                )
            if not access.levels:
                refusal = Forbidden(
                    "You are not a member of any space yet, so there is nothing to show. "
                    "Ask the owner to add you to one."
                )
                return self.refused(request, session, refusal, "No space yet")
            if request.method == "POST":
                form = await request.form()
                if not session.csrf_matches(text(form.get("csrf"))):
                    return self.render(
                        request,
                        session,
                        "refused.html",
                        {
                            "title": "The form expired",
                            "error": "This form is no longer valid (its security token did "
                            "not match). Reload the page and try again; nothing was changed.",
                            "code": "csrf",
                        },
                        status_code=403,
                    )
            return await handler(self, request, session)

        return endpoint

    def routes(self) -> list[BaseRoute]:
        table: list[tuple[str, Handler, list[str]]] = [
            ("", browse.browse, ["GET"]),
            ("/new", adding.add_page, ["GET"]),
            ("/new", adding.add, ["POST"]),
            ("/memories/{memory_id}", record.record, ["GET"]),
            ("/search", search.search, ["GET"]),
            ("/memories/{memory_id}/deprecate", curate.deprecate_page, ["GET"]),
            ("/memories/{memory_id}/deprecate", curate.deprecate, ["POST"]),
            ("/memories/{memory_id}/correct", curate.correct, ["POST"]),
            ("/memories/{memory_id}/promote", curate.promote, ["POST"]),
            ("/memories/{memory_id}/space", relocate.move_to_space, ["POST"]),
            ("/memories/{memory_id}/relations", relating.relate, ["POST"]),
            ("/memories/{memory_id}/relations/invalidate", relating.invalidate, ["POST"]),
            ("/graph", graph.graph_page, ["GET"]),
            ("/bulk", bulk.bulk_page, ["GET"]),
            ("/bulk", bulk.bulk_apply, ["POST"]),
            ("/undo", undoing.undo_action, ["POST"]),
            ("/consolidate", consolidate.consolidate_page, ["GET"]),
            ("/consolidate/preview", consolidate.consolidate_preview, ["POST"]),
            ("/consolidate/confirm", consolidate.consolidate_confirm, ["POST"]),
            ("/erase", erase.erase_page, ["GET"]),
            ("/erase", erase.erase_confirm, ["POST"]),
            ("/clients", clients.clients_page, ["GET"]),
            ("/clients", clients.create_client, ["POST"]),
            ("/clients/grants/{grant_id}/pause", client_page.pause_grant_action, ["POST"]),
            ("/clients/grants/{grant_id}/resume", client_page.resume_grant_action, ["POST"]),
            ("/clients/grants/{grant_id}/revoke", client_page.revoke_page, ["GET"]),
            ("/clients/grants/{grant_id}/revoke", client_page.revoke_grant_action, ["POST"]),
            ("/clients/{client_id}", client_page.client_page, ["GET"]),
            ("/clients/{client_id}/pause", client_page.pause_client, ["POST"]),
            ("/clients/{client_id}/grant", client_page.grant_space, ["POST"]),
            ("/clients/{client_id}/ungrant", client_page.ungrant_space, ["POST"]),
            ("/clients/{client_id}/resume", client_page.resume_client, ["POST"]),
            ("/clients/{client_id}/remove", client_page.remove_page, ["GET"]),
            ("/clients/{client_id}/remove", client_page.remove_client, ["POST"]),
            ("/activity", activity.activity_page, ["GET"]),
            ("/spaces", spaces_page.spaces_page, ["GET"]),
            ("/spaces", spaces_page.add_space, ["POST"]),
            ("/spaces/{key}/rename", spaces_page.rename_space, ["POST"]),
            ("/spaces/{key}/remove", spaces_page.remove_space, ["POST"]),
            ("/people", people_page.people_page, ["GET"]),
            ("/people", people_page.add_person, ["POST"]),
            ("/people/{person_id}/role", people_page.change_role, ["POST"]),
            ("/people/{person_id}/spaces", people_page.change_spaces, ["POST"]),
            ("/people/{person_id}/deactivate", people_page.deactivate, ["POST"]),
            ("/people/{person_id}/reactivate", people_page.reactivate, ["POST"]),
            ("/people/{person_id}/invite", people_page.invite_person, ["POST"]),
            ("/backup", backup.backup_page, ["GET"]),
            ("/documents", documents.documents_page, ["GET"]),
            ("/documents/{document_id}", documents.document_page, ["GET"]),
            ("/documents/{document_id}/erase", documents.erase_page, ["GET"]),
            ("/documents/{document_id}/erase", documents.erase_confirm, ["POST"]),
            ("/export", backup.export, ["GET"]),
        ]
        routes: list[BaseRoute] = []
        for prefix in ("", FUNCTION_PREFIX):
            routes += [
                Route(
                    prefix + HOME + path,
                    self._page(
                        handler,
                        owner_only=path.startswith(OWNER_PAGES) or path.endswith(OWNER_ACTIONS),
                    ),
                    methods=methods,
                )
                for path, handler, methods in table
            ]
            # The upload's body is counted as it arrives (refused past the size limit).
            upload = documents.limited_body(self, self._page(documents.upload))
            routes.append(Route(prefix + HOME + documents.UPLOAD_PATH, upload, methods=["POST"]))
            imported = documents.limited_body(
                self,
                self._page(history_import.import_history),
                history_import.SETTING,
                "Import the export's conversations.json alone (it is in the zip file), or "
                "ask the operator to raise the limit.",
            )
            routes.append(
                Route(prefix + HOME + history_import.IMPORT_PATH, imported, methods=["POST"])
            )
            routes += [
                Route(prefix + STYLESHEET, _static("console.css", "text/css"), methods=["GET"]),
                Route(prefix + SCRIPT, _static("console.js", "text/javascript"), methods=["GET"]),
            ]
        if self._own_owner:
            routes += self.owner.routes()
        return routes


def _static(name: str, media_type: str) -> Callable[[Request], Awaitable[Response]]:
    body = (HERE / "static" / name).read_bytes()

    async def serve(request: Request) -> Response:
        return Response(
            body,
            media_type=media_type,
            headers={"cache-control": "public, max-age=3600", "x-content-type-options": "nosniff"},
        )

    return serve
