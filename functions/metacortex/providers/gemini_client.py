"""The connection to Gemini shared by the Gemini providers.

Three concerns live here and nowhere else: choosing Vertex AI or the Gemini API
from ``Settings``, building the google-genai client lazily (importing
``google.genai`` costs ~0.5 s and constructing providers must never touch the
network), and turning provider failures into ``Unavailable`` after bounded
retries, with the provider's reason and never the API key.

The SDK's own retries stay off (no ``HttpRetryOptions``): this module owns the
policy so that tests can inject the sleep and count attempts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from pydantic import SecretStr

from metacortex.config import Settings
from metacortex.errors import ConfigurationError, Unavailable
from metacortex.providers.common import TRANSIENT_STATUS, LazyClient, RetryPolicy, clip

if TYPE_CHECKING:
    from google import genai
    from google.auth.credentials import Credentials
    from google.genai import types

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Connection:
    """Where Gemini calls go: the Gemini API with a key, or Vertex AI in a Google project.

    An API key wins when both are configured, so an operator can point a
    deployment at the Gemini API without unsetting the project.
    """

    api_key: SecretStr | None
    project: str | None
    location: str

    @classmethod
    def from_settings(cls, settings: Settings) -> Connection:
        key = settings.gemini_api_key.get_secret_value().strip() if settings.gemini_api_key else ""
        if key:
            return cls(
                api_key=SecretStr(key), project=None, location=settings.google_cloud_location
            )
        if settings.google_cloud_project:
            return cls(
                api_key=None,
                project=settings.google_cloud_project,
                location=settings.google_cloud_location,
            )
        raise ConfigurationError(
            "Gemini is configured but has no credentials: set GEMINI_API_KEY (Gemini API), "
            "or GOOGLE_CLOUD_PROJECT (Vertex AI with the runtime's service account; "
            "GOOGLE_CLOUD_LOCATION defaults to us-central1)"
        )

    @property
    def vertexai(self) -> bool:
        return self.api_key is None

    def scrub(self, text: str) -> str:
        """``text`` with the API key blanked out, wherever a library might have echoed it."""
        if self.api_key is None:
            return text
        return text.replace(self.api_key.get_secret_value(), "[redacted]")


class GeminiClient(LazyClient["genai.Client"]):
    """A lazily built ``genai.Client`` plus the retry loop every Gemini call goes through.

    ``http_options`` and ``credentials`` exist for tests (a fake HTTP transport,
    static Vertex credentials); production leaves them unset.
    """

    def __init__(
        self,
        connection: Connection,
        *,
        timeout_seconds: float,
        http_options: types.HttpOptions | None = None,
        credentials: Credentials | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        super().__init__(retry)
        self._connection = connection
        self._timeout_ms = int(timeout_seconds * 1000)
        self._http_options = http_options
        self._credentials = credentials

    @property
    def connection(self) -> Connection:
        return self._connection

    def _build(self) -> genai.Client:
        from google import genai
        from google.genai import types

        options = self._http_options or types.HttpOptions()
        if options.timeout is None:
            options = options.model_copy(update={"timeout": self._timeout_ms})
        conn = self._connection
        try:
            if conn.api_key is not None:
                # vertexai=False explicitly: GOOGLE_GENAI_USE_VERTEXAI must not flip the mode.
                return genai.Client(
                    vertexai=False, api_key=conn.api_key.get_secret_value(), http_options=options
                )
            return genai.Client(
                vertexai=True,
                project=conn.project,
                location=conn.location,
                credentials=self._credentials,
                http_options=options,
            )
        except ValueError as exc:
            raise Unavailable(conn.scrub(f"Gemini client could not be created: {exc}")) from exc

    def call(
        self,
        operation: str,
        request: Callable[[genai.Client], T],
        *,
        retry: RetryPolicy | None = None,
        quota_hint: str = "",
    ) -> T:
        """``request(client)``, retried on transient failures; ``Unavailable`` when it gives up.

        ``operation`` names the call in error messages ("embedding", "image description");
        ``retry`` replaces the client's policy for this call; ``quota_hint`` is added to
        the message when the last answer was 429 (what the operator can change).
        """
        policy = retry or self._retry
        import httpx2
        from google.auth import exceptions as auth_errors
        from google.genai import errors as genai_errors

        client = self._get()
        attempt = 0
        while True:
            attempt += 1
            asked: float | None = None
            status: int | None = None
            try:
                return request(client)
            except genai_errors.APIError as exc:
                status = exc.code
                reason = _api_reason(exc)
                transient = exc.code in TRANSIENT_STATUS
                asked = _retry_after(exc)
            except (httpx2.TransportError, auth_errors.TransportError) as exc:
                reason = f"network error ({type(exc).__name__}: {exc})"
                transient = True
            except auth_errors.GoogleAuthError as exc:
                # Missing or refused credentials (DefaultCredentialsError, RefreshError):
                # retrying cannot help.
                reason = f"Google credentials failed ({type(exc).__name__}: {exc})"
                transient = False
            if not transient or attempt >= policy.attempts:
                tries = f" after {attempt} attempts" if attempt > 1 else ""
                message = f"Gemini {operation} failed{tries}: {clip(reason)}"
                if status == 429 and quota_hint:
                    message = f"{message} ({quota_hint})"
                # Raised outside the except blocks on purpose: no chained exception whose
                # text could carry what a library echoed (the reason is in the message).
                raise Unavailable(self._connection.scrub(message))
            policy.sleep(policy.wait(attempt, asked))


def _retry_after(exc: Exception) -> float | None:
    """The wait the provider asked for, in seconds: a ``Retry-After`` header (HTTP dates
    are ignored), else the ``retryDelay`` of a ``google.rpc.RetryInfo`` error detail
    ("36s"), which is how the Gemini API states it on 429."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    value = headers.get("retry-after") if headers is not None else None
    if value is None:
        value = _retry_info_delay(getattr(exc, "details", None))
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    return seconds if seconds is not None and seconds >= 0 else None


def _retry_info_delay(details: object) -> str | None:
    error = details.get("error") if isinstance(details, dict) else None
    items = error.get("details") if isinstance(error, dict) else None
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict) or not str(item.get("@type", "")).endswith("RetryInfo"):
            continue
        delay = item.get("retryDelay")
        if isinstance(delay, str) and delay.endswith("s"):
            return delay[:-1]
    return None


def _api_reason(exc: Exception) -> str:
    code = getattr(exc, "code", None)
    status = getattr(exc, "status", None)
    message = getattr(exc, "message", None)
    head = " ".join(str(part) for part in (code, status) if part)
    return f"{head}: {message}" if message else head or type(exc).__name__


def generated_text(response: types.GenerateContentResponse, operation: str) -> tuple[str, str]:
    """The first candidate's text and finish reason; ``Unavailable`` when blocked or empty."""
    feedback = response.prompt_feedback
    if feedback is not None and feedback.block_reason is not None:
        detail = f" ({feedback.block_reason_message})" if feedback.block_reason_message else ""
        raise Unavailable(
            f"Gemini {operation} was blocked: the request was refused as "
            f"{_enum_name(feedback.block_reason)}{detail}"
        )
    if not response.candidates:
        raise Unavailable(f"Gemini {operation} returned no candidates")
    finish = _enum_name(response.candidates[0].finish_reason)
    if finish not in ("STOP", "MAX_TOKENS", "FINISH_REASON_UNSPECIFIED", "none"):
        raise Unavailable(f"Gemini {operation} was stopped by the model (finish reason {finish})")
    text = (response.text or "").strip()
    if not text:
        raise Unavailable(f"Gemini {operation} returned no text (finish reason {finish})")
    return text, finish


def _enum_name(value: object) -> str:
    if value is None:
        return "none"
    return str(getattr(value, "value", value))
