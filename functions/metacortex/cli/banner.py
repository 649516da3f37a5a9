"""What ``metacortex serve`` prints once it is ready: where it is and the one next step.

About a dozen lines, so the console's address and what to do next stay on the
screen: the address and endpoints, the admin token on the run that generated it,
the next step (set the owner passphrase while none is set, else sign in at the
console) and where applications are connected (the console's clients page,
``metacortex init``). Each application's snippet is one command away
(``metacortex client snippets``, the same renderer as the console's and
``client add``'s), not in the banner. Commands are spelled as they run from
where the user is (``cli/program.py``); the last line is the snippets command.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable
from pathlib import Path

from metacortex import __version__
from metacortex.access.profiles import BROWSER_TOOLS, Profiles
from metacortex.appconfig.targets import TARGETS
from metacortex.clients.snippets import ADMIN_TOKEN_VARIABLE


def base_url(host: str, port: int) -> str:
    if host in ("0.0.0.0", ""):  # noqa: S104 (a bind address, compared, not bound here)
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    try:
        if ipaddress.ip_address(host).version == 6:
            host = f"[{host}]"
    except ValueError:
        pass
    return f"http://{host}:{port}"


def banner(
    *,
    url: str,
    data_dir: Path,
    profiles: Profiles,
    token_path: Path | None,
    new_token: str | None,
    passphrase_set: bool,
    command: Callable[[str], str],
    oauth: bool = False,
    stored_clients: Iterable[str] = (),
    models: Iterable[str] = (),
) -> str:
    """``command("owner set-passphrase")``: that command spelled to run from here on
    this server's store."""
    token = f"token in {token_path}" if token_path is not None else f"token ${ADMIN_TOKEN_VARIABLE}"
    lines = [
        f"MetaCortex {__version__} is ready at {url}",
        f"  admin endpoint    POST {url}/mcp ({token})",
    ]
    client_ids = sorted({*profiles.clients, *stored_clients})
    if client_ids:
        ids = ", ".join(client_ids)
        lines.append(f"  client endpoints  POST {url}/clients/<id>/mcp (ids: {ids})")
    # An MCP_CLIENT_PROFILES_JSON entry without allowedTools starts with the original's
    # browser tools: said here, so the operator knows what it was given.
    lines += [
        f"  client {profile.id:<10} no allowedTools: given {', '.join(BROWSER_TOOLS)}"
        for profile in profiles.clients.values()
        if profile.tools_by_default
    ]
    lines += [f"  console           {url}/console", f"  data directory    {data_dir}"]
    # The models, and whether each save also pays a chat call (fact extraction).
    lines += [f"  models            {line}" for line in models]
    lines.append("")
    if new_token is not None:
        lines += [
            f"Admin token, shown only this once (stored in {token_path}, mode 0600):",
            f"  {new_token}",
            "",
        ]
    if passphrase_set:
        lines += [f"Next: sign in at {url}/console with the owner passphrase.", ""]
    else:
        lines += [
            f"Next: set the owner passphrase, then sign in at {url}/console:",
            f"  {command('owner set-passphrase')}",
            "",
        ]
    if oauth:
        lines.append(
            f"OAuth is on: an application takes the URL {url}/mcp and the owner approves it "
            "on the consent page (docs/CONNECTORS.md)."
        )
    lines += [
        f"Connect an application at {url}/console/clients, or from here "
        f"(APP: {', '.join(TARGETS)}):",
        f"  {command('init --target APP')}",
        f"Every application's configuration, to paste: {command('client snippets')}",
    ]
    return "\n".join(lines)
