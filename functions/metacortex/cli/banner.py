"""What ``metacortex serve`` prints once it is ready: endpoints and client configurations.

The token itself appears only on the run that generated it; the snippets read
it from the environment variable ``MCP_ADMIN_TOKEN`` (the name the server and
``metacortex smoke`` read too), so a pasted configuration never contains it.
"""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path

from metacortex import __version__
from metacortex.server.profiles import Profiles

SHELL_VARIABLE = "MCP_ADMIN_TOKEN"


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
    oauth: bool = False,
    passphrase_command: str | None = None,
) -> str:
    """``passphrase_command``: how to set the owner passphrase, when none is set."""
    admin_url = f"{url}/mcp"
    lines = [
        f"MetaCortex {__version__} is ready at {url}",
        f"  data directory    {data_dir}",
        f"  admin endpoint    POST {admin_url}",
    ]
    if profiles.clients:
        ids = ", ".join(sorted(profiles.clients))
        lines.append(f"  client endpoints  POST {url}/clients/<id>/mcp  (ids: {ids})")
    lines += [f"  health            GET  {url}/healthz", f"  console           {url}/console", ""]
    if passphrase_command is not None:
        lines += ["No owner passphrase is set; set one to sign in to the console:"]
        lines += [f"  {passphrase_command}", ""]
    if new_token is not None:
        lines += [
            f"Admin token, shown only this once (stored in {token_path}, mode 0600):",
            f"  {new_token}",
            "",
        ]
    if token_path is not None:
        lines.append(f"The admin token is stored in {token_path}. Load it into your shell:")
        lines.append(f'  export {SHELL_VARIABLE}="$(cat {token_path})"')
    else:
        lines.append(f"The admin token is {SHELL_VARIABLE}, from the environment.")
    generic = {
        "mcpServers": {
            "metacortex": {
                "type": "http",
                "url": admin_url,
                "headers": {"Authorization": f"Bearer ${{{SHELL_VARIABLE}}}"},
            }
        }
    }
    lines += [
        "",
        "Claude Code:",
        f"  claude mcp add --transport http metacortex {admin_url} "
        f'--header "Authorization: Bearer ${SHELL_VARIABLE}"',
        "Codex (~/.codex/config.toml):",
        "  [mcp_servers.metacortex]",
        f'  url = "{admin_url}"',
        f'  bearer_token_env_var = "{SHELL_VARIABLE}"',
        "Any MCP client that takes JSON:",
        "  " + json.dumps(generic),
        "",
        "Scoped endpoints for other clients: metacortex client add <id> --help",
    ]
    if oauth:
        lines += [
            "",
            f"OAuth is on: give a client the URL {admin_url} and approve it at the consent",
            f"page (owner sign-in: {url}/owner/sign-in; passphrase: metacortex owner",
            "set-passphrase). Step by step: docs/CONNECTORS.md",
        ]
    return "\n".join(lines)
