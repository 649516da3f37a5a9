"""The owner's People page: everyone who may sign in, with their role, whether they are
active and the spaces they are members of; add a person, change their role or spaces,
deactivate or reactivate them, and make an invitation link.

Each change goes through what ``metacortex person`` uses (``access.registry.Registry``;
the link: ``owner.invitations.invite``, valid ``METACORTEX_INVITATION_DAYS`` days, shown
once on the page that made it and never stored in the clear). Every server applies a
change within ``METACORTEX_CLIENT_REFRESH_SECONDS`` (a deactivated person's
credentials are then refused). Each is recorded as an ``owner_action`` event naming the
person's id, never their email or name.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Final
from urllib.parse import urlencode

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

from metacortex.access.model import DEFAULT_SPACE, Directory, Level, Person, Role
from metacortex.access.registry import Registry
from metacortex.console.base import ConsoleBase, form_text
from metacortex.console.switcher import space_labels
from metacortex.errors import FailedPrecondition, InvalidArgument, MetaCortexError
from metacortex.owner import Session
from metacortex.owner.invitations import INVITE_PATH, invite

PAGE: Final = "/console/people"
ROLES: Final = (Role.WRITER.value, Role.READER.value)
NOTICES: Final = {
    "added": "{name} was added. Make an invitation link below and send it to them.",
    "role": "{name}'s role was changed.",
    "spaces": "{name}'s spaces were changed.",
    "deactivated": "{name} was deactivated: their clients and sign-in stop working.",
    "reactivated": "{name} was reactivated.",
}


def _space_keys(directory: Directory) -> list[str]:
    return sorted(directory.spaces, key=lambda key: (key != DEFAULT_SPACE, key))


def _row(person: Person, keys: list[str]) -> dict[str, Any]:
    return {
        "id": person.id,
        "email": person.email,
        "name": person.name,
        "role": person.role.value,
        "active": person.active,
        "is_owner": person.is_owner,
        "created_at": person.created_at,
        "member": {key: level.word for key in keys if (level := person.spaces.get(key))},
        "levels": {key: level.word for key in keys if (level := person.level_in(key))},
    }


async def people_page(
    console: ConsoleBase,
    request: Request,
    session: Session,
    *,
    error: str | None = None,
    form: Mapping[str, Any] | None = None,
    invited: Mapping[str, Any] | None = None,
    status_code: int = 200,
) -> Response:
    directory = await console.call(Registry(console.service.store).directory)
    keys = _space_keys(directory)
    people = sorted(
        directory.people.values(), key=lambda p: (not p.is_owner, p.name.casefold(), p.id)
    )
    done = request.query_params.get("done", "")
    named = directory.person(request.query_params.get("person", ""))
    notice = NOTICES[done].format(name=named.name) if done in NOTICES and named else None
    return console.render(
        request,
        session,
        "people.html",
        {
            "title": "People",
            "people": [_row(person, keys) for person in people],
            "spaces": list(space_labels(directory, keys).items()),
            "roles": ROLES,
            "refresh_seconds": console.settings.metacortex_client_refresh_seconds,
            "invitation_days": console.settings.metacortex_invitation_days,
            "form": form or {"role": Role.WRITER.value, "member": {}},
            "invited": invited,
            "notice": notice,
            "error": error,
        },
        status_code=status_code,
    )


def _membership(fields: FormData, directory: Directory) -> dict[str, Level]:
    """The form's ``space-KEY`` choices: read, write or (empty) not a member."""
    levels = {}
    for key in directory.spaces:
        word = form_text(fields, f"space-{key}")
        if word is not None:
            levels[key] = Level.parse(word, f"the level in {key!r}")
    return levels


async def _change(
    console: ConsoleBase,
    request: Request,
    session: Session,
    action: str,
    change: Callable[[Registry], Person],
    done: str,
    form: Mapping[str, Any] | None = None,
) -> Response:
    """Run ``change`` (recorded as ``action``), then the page again saying what it did."""
    registry = Registry(console.service.store)
    started = time.perf_counter()
    target = request.path_params.get("person_id")
    summary = {"person": target} if target else {}
    try:
        person = await console.call(lambda: change(registry))
    except MetaCortexError as error:
        console.record_action(request, action, started, summary, error=error, in_space=False)
        return await people_page(
            console,
            request,
            session,
            error=error.message,
            form=form,
            status_code=console.status_of(error),
        )
    console.record_action(
        request, action, started, summary, response={"person": person.id}, in_space=False
    )
    return console.redirect(request, f"{PAGE}?{urlencode({'done': done, 'person': person.id})}")


async def add_person(console: ConsoleBase, request: Request, session: Session) -> Response:
    fields = await request.form()
    email = form_text(fields, "email") or ""
    name = form_text(fields, "name") or ""
    role = form_text(fields, "role") or ""
    member = {
        key[len("space-") :]: str(value)
        for key, value in fields.items()
        if key.startswith("space-") and value
    }
    form = {"email": email, "name": name, "role": role, "member": member}

    def add(registry: Registry) -> Person:
        if role not in ROLES:
            raise InvalidArgument(f"role must be writer or reader; got {role!r}")
        levels = _membership(fields, registry.directory())
        return registry.add_person(email, name, Role(role), levels)

    return await _change(console, request, session, "person_add", add, "added", form)


async def change_role(console: ConsoleBase, request: Request, session: Session) -> Response:
    role = form_text(await request.form(), "role") or ""

    def change(registry: Registry) -> Person:
        if role not in ROLES:
            raise InvalidArgument(f"role must be writer or reader; got {role!r}")
        return registry.change_person(request.path_params["person_id"], role=Role(role))

    return await _change(console, request, session, "person_role", change, "role")


async def change_spaces(console: ConsoleBase, request: Request, session: Session) -> Response:
    fields = await request.form()

    def change(registry: Registry) -> Person:
        levels = _membership(fields, registry.directory())
        return registry.change_person(request.path_params["person_id"], spaces=levels)

    return await _change(console, request, session, "person_spaces", change, "spaces")


def _activation(active: bool) -> Callable[[ConsoleBase, Request, Session], Any]:
    async def handler(console: ConsoleBase, request: Request, session: Session) -> Response:
        def change(registry: Registry) -> Person:
            return registry.change_person(request.path_params["person_id"], active=active)

        action, done = (
            ("person_reactivate", "reactivated") if active else ("person_deactivate", "deactivated")
        )
        return await _change(console, request, session, action, change, done)

    return handler


deactivate = _activation(False)
reactivate = _activation(True)


async def invite_person(console: ConsoleBase, request: Request, session: Session) -> Response:
    """A new one-time link for the person, shown on this page only (an earlier unused one
    stops working)."""
    store = console.service.store
    days = console.settings.metacortex_invitation_days
    started = time.perf_counter()
    summary = {"person": request.path_params["person_id"], "days": days}

    def make() -> tuple[Person, str, str]:
        person = Registry(store).person(request.path_params["person_id"])
        if person.is_owner or person.email is None:
            raise InvalidArgument("the owner signs in with the owner's passphrase")
        if not person.active:
            raise FailedPrecondition(f"{person.name} is deactivated; reactivate them first")
        token, invitation = invite(store, person, days)
        return person, token, invitation.valid_until.strftime("%Y-%m-%d %H:%M UTC")

    try:
        person, token, until = await console.call(make)
    except MetaCortexError as error:
        console.record_action(
            request, "person_invite", started, summary, error=error, in_space=False
        )
        return await people_page(
            console, request, session, error=error.message, status_code=console.status_of(error)
        )
    console.record_action(
        request, "person_invite", started, summary, response={"person": person.id}, in_space=False
    )
    invited = {
        "id": person.id,
        "name": person.name,
        "email": person.email,
        "link": console.owner.url(request, f"{INVITE_PATH}/{token}"),
        "until": until,
    }
    return await people_page(console, request, session, invited=invited)
