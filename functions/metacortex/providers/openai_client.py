"""The connection to an OpenAI-compatible API shared by the OpenAI providers.

One place decides where calls go (OpenAI, any server speaking its API at a base URL:
Ollama, vLLM, llama.cpp's server, LM Studio; or Azure OpenAI by its endpoint and API
version), builds the ``openai`` client lazily (constructing a provider never touches
the network or imports the SDK), and turns failures into ``Unavailable`` after bounded
retries, with the provider's reason and never the key.

The SDK's own retries are off (``max_retries=0``): ``RetryPolicy`` owns them, as for
Gemini, so tests inject the sleep and count attempts. Every setting is passed to the
SDK explicitly, so it reads nothing from the environment itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeVar
from urllib.parse import urlsplit

from pydantic import SecretStr

from metacortex.config import Settings
from metacortex.errors import ConfigurationError, Unavailable
from metacortex.providers.common import TRANSIENT_STATUS, LazyClient, RetryPolicy, clip

if TYPE_CHECKING:
    import httpx2
    import openai

T = TypeVar("T")

OPENAI_BASE_URL: Final = "https://api.openai.com/v1"
# Sent as the bearer token to a server that needs no key (Ollama ignores it; the SDK
# refuses an empty one).
NO_KEY: Final = "no-key"
EMBED_TIMEOUT_SECONDS: Final = 30.0


@dataclass(frozen=True, slots=True)
class OpenAIConnection:
    """Where calls go: ``base_url`` with a bearer key, or Azure OpenAI's
    ``azure_endpoint`` (deployments named by the model settings) with an ``api-key``."""

    base_url: str
    api_key: SecretStr | None
    azure_endpoint: str | None = None
    api_version: str = "2024-10-21"
    organization: str | None = None
    project: str | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> OpenAIConnection:
        raw_key = (
            settings.openai_api_key.get_secret_value().strip() if settings.openai_api_key else ""
        )
        key = SecretStr(raw_key) if raw_key else None
        endpoint = (settings.azure_openai_endpoint or "").strip().rstrip("/") or None
        base_url = settings.openai_base_url.strip().rstrip("/")
        for name, url in (("AZURE_OPENAI_ENDPOINT", endpoint), ("OPENAI_BASE_URL", base_url)):
            if url is not None and urlsplit(url).scheme not in ("http", "https"):
                raise ConfigurationError(f"{name} must be an http(s) URL, not {url!r}")
        if endpoint is not None and key is None:
            raise ConfigurationError(
                "Azure OpenAI is configured (AZURE_OPENAI_ENDPOINT) without a key: "
                "set AZURE_OPENAI_API_KEY (or OPENAI_API_KEY)"
            )
        if endpoint is None and key is None and base_url == OPENAI_BASE_URL:
            raise ConfigurationError(
                "OpenAI is configured without a key: set OPENAI_API_KEY, or point "
                "OPENAI_BASE_URL at an OpenAI-compatible server (Ollama: "
                "http://localhost:11434/v1)"
            )
        return cls(
            base_url=base_url,
            api_key=key,
            azure_endpoint=endpoint,
            api_version=settings.azure_openai_api_version,
            organization=settings.openai_org_id,
            project=settings.openai_project_id,
        )

    @property
    def azure(self) -> bool:
        return self.azure_endpoint is not None

    @property
    def method_prefix(self) -> str:
        """Names the service in ``merge_method`` and extraction's ``model``."""
        return "azure-openai" if self.azure else "openai"

    @property
    def label(self) -> str:
        """Names the service in error messages."""
        if self.azure_endpoint is not None:
            return "Azure OpenAI"
        if self.base_url == OPENAI_BASE_URL:
            return "OpenAI"
        return f"the OpenAI-compatible server at {urlsplit(self.base_url).netloc}"

    def scrub(self, text: str) -> str:
        """``text`` with the key blanked out, wherever a library might have echoed it."""
        if self.api_key is None:
            return text
        return text.replace(self.api_key.get_secret_value(), "[redacted]")


class OpenAIClient(LazyClient["openai.OpenAI"]):
    """A lazily built ``openai.OpenAI`` (or ``AzureOpenAI``) plus the retry loop every
    call goes through. ``http_client`` exists for tests; production leaves it unset."""

    def __init__(
        self,
        connection: OpenAIConnection,
        *,
        timeout_seconds: float,
        retry: RetryPolicy | None = None,
        http_client: httpx2.Client | None = None,
    ) -> None:
        super().__init__(retry)
        self._connection = connection
        self._timeout = timeout_seconds
        self._http_client = http_client

    @property
    def connection(self) -> OpenAIConnection:
        return self._connection

    def _build(self) -> openai.OpenAI:
        import openai

        conn = self._connection
        key = conn.api_key.get_secret_value() if conn.api_key is not None else NO_KEY
        common: dict[str, Any] = {
            "api_key": key,
            "organization": conn.organization,
            "project": conn.project,
            "timeout": self._timeout,
            "max_retries": 0,
            "http_client": self._http_client,
        }
        if conn.azure_endpoint is not None:
            return openai.AzureOpenAI(
                azure_endpoint=conn.azure_endpoint, api_version=conn.api_version, **common
            )
        return openai.OpenAI(base_url=conn.base_url, **common)

    def call(
        self,
        operation: str,
        request: Callable[[openai.OpenAI], T],
        *,
        retry: RetryPolicy | None = None,
    ) -> T:
        """``request(client)``, retried on 408, 429, 5xx, timeouts and network errors;
        ``Unavailable`` naming the service, the status and its message when it gives up."""
        import openai

        policy = retry or self._retry
        client = self._get()
        attempt = 0
        while True:
            attempt += 1
            asked: float | None = None
            try:
                return request(client)
            except openai.APIStatusError as exc:
                reason = _status_reason(exc)
                transient = exc.status_code in TRANSIENT_STATUS
                asked = _retry_after(exc.response.headers)
            except openai.APITimeoutError:
                reason = f"no answer within {self._timeout:g} s (OPENAI_TIMEOUT_SECONDS)"
                transient = True
            except openai.APIConnectionError as exc:
                cause = exc.__cause__
                detail = f"{type(cause).__name__}: {cause}" if cause else str(exc)
                reason = f"network error ({detail})"
                transient = True
            if not transient or attempt >= policy.attempts:
                tries = f" after {attempt} attempts" if attempt > 1 else ""
                message = f"{self._connection.label} {operation} failed{tries}: {clip(reason)}"
                # Raised outside the except blocks on purpose: no chained exception whose
                # text could carry what a library echoed (the reason is in the message).
                raise Unavailable(self._connection.scrub(message))
            policy.sleep(policy.wait(attempt, asked))


def _status_reason(exc: openai.APIStatusError) -> str:
    """``429 rate_limit_exceeded: ...`` from the error body OpenAI, Azure and Ollama
    send (``{"error": {"message", "type", "code"}}``), else the status alone."""
    body = exc.body
    error = body.get("error", body) if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    kind = (error.get("code") or error.get("type")) if isinstance(error, dict) else None
    head = " ".join(str(part) for part in (exc.status_code, kind) if part)
    return f"{head}: {message}" if isinstance(message, str) and message else head


def _retry_after(headers: httpx2.Headers) -> float | None:
    """The wait the service asked for, in seconds: ``retry-after-ms`` (OpenAI, Azure),
    else ``retry-after`` in seconds (HTTP dates are ignored)."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            continue
        if seconds >= 0:
            return seconds
    return None
