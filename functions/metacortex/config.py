"""All configuration, read once from the environment (and ``.env``) into ``Settings``.

Nothing else in the package reads ``os.environ``: the composition roots
(``metacortex serve``, the Cloud Functions entry, tests) build a ``Settings``
and pass it down.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Final, Literal

from pydantic import AliasChoices, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from metacortex.domain import limits
from metacortex.domain.records import BranchState

StoreKind = Literal["sqlite", "firestore"]
EmbeddingsKind = Literal["local", "gemini", "openai"]
# Who runs the chat model (consolidation merges, fact extraction, image descriptions).
GenerationKind = Literal["none", "gemini", "openai"]
# "auto": on wherever a chat model is configured; "gemini" is the name it had when only
# Gemini could extract (kept: it means "on", and needs Gemini generation).
ExtractionKind = Literal["auto", "on", "off", "gemini"]
OcrKind = Literal["auto", "on", "off"]
StructuredOutput = Literal["json_schema", "json_object"]
Deployment = Literal["local", "cloud"]
LogFormat = Literal["auto", "json", "text"]

CommaList = Annotated[tuple[str, ...], NoDecode]

# The admin endpoint's default rate limit: 50 calls a second, about what one local server
# process serves flat out (49-65 calls/s, docs/benchmarks.md "Load test"), so an import
# over MCP on the owner's token runs at the server's speed, while what a runaway script
# costs each instance stays bounded. Client endpoints and OAuth grants keep
# METACORTEX_RATE_LIMIT_PER_MINUTE (300). docs/OPERATING.md, "Rate limits".
ADMIN_RATE_LIMIT_PER_MINUTE: Final = 3000


def _default_data_dir() -> Path:
    return Path.home() / ".local" / "share" / "metacortex"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_file=".env", env_file_encoding="utf-8", extra="ignore", frozen=True
    )

    # Which composition root built these settings; decides the store/embedding defaults.
    deployment: Deployment = Field(default="local", exclude=True)
    # Set by `metacortex serve` when it binds a loopback address: local pages
    # (http://localhost:*, http://127.0.0.1:*, http://[::1]:*) are then accepted as
    # origins on every endpoint, as the MCP SDK does. A public bind keeps exact lists.
    bind_is_loopback: bool = Field(default=False, exclude=True)

    # --- storage and models -------------------------------------------------------
    metacortex_store: StoreKind | None = None
    metacortex_embeddings: EmbeddingsKind | None = None
    metacortex_data_dir: Path = Field(default_factory=_default_data_dir)
    memory_collection: str = "memory_vectors"
    google_cloud_project: str | None = Field(
        default=None, validation_alias=AliasChoices("GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT")
    )
    google_cloud_location: str = "us-central1"
    firestore_database: str = "(default)"
    gemini_api_key: SecretStr | None = None
    gemini_embedding_model: str = "gemini-embedding-001"
    gemini_embedding_dimensions: int = Field(default=768, ge=1, le=2048)
    gemini_multimodal_model: str = "gemini-2.5-flash"
    gemini_merge_model: str = "gemini-2.5-flash"
    # Offline deployments have no generation model; set to true to use Gemini for
    # image description and merges while keeping local embeddings (the same as
    # METACORTEX_GENERATION=gemini).
    metacortex_use_gemini_generation: bool = False
    # The chat model for merges, fact extraction and image descriptions: Gemini, an
    # OpenAI-compatible server (docs/openai.md), or none. Unset: Gemini in the cloud
    # (or with the setting above), none on a laptop.
    metacortex_generation: GenerationKind | None = None
    # Fact extraction on save_context (docs/gemini.md, "Fact extraction"): on wherever a
    # chat model is configured ("auto"), the cloud included; "off" turns it off; "on"
    # refuses to start without a chat model. Each save then costs one chat call.
    metacortex_extraction: ExtractionKind = "auto"
    gemini_extraction_model: str = "gemini-2.5-flash"
    # --- OpenAI-compatible providers (docs/openai.md, docs/ollama.md, docs/azure-openai.md)
    # The API's base URL: OpenAI's by default; http://localhost:11434/v1 for Ollama, a
    # vLLM, llama.cpp or LM Studio server's /v1. Ignored when AZURE_OPENAI_ENDPOINT is set.
    openai_base_url: str = "https://api.openai.com/v1"
    # Sent as a bearer token (Azure: the api-key header). A local server that wants none
    # may leave it unset.
    openai_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_API_KEY", "AZURE_OPENAI_API_KEY")
    )
    openai_org_id: str | None = None
    openai_project_id: str | None = None
    # Azure OpenAI: https://<resource>.openai.azure.com; the model settings below then
    # name deployments.
    azure_openai_endpoint: str | None = None
    azure_openai_api_version: str = Field(
        default="2024-10-21",
        validation_alias=AliasChoices("AZURE_OPENAI_API_VERSION", "OPENAI_API_VERSION"),
    )
    openai_embedding_model: str = "text-embedding-3-small"
    # The vectors' size. Set, it is also sent as `dimensions` (shortened vectors, for
    # models that take it); unset, the model's own size (known for OpenAI's models).
    openai_embedding_dimensions: int | None = Field(default=None, ge=1, le=8192)
    openai_chat_model: str = "gpt-4o-mini"
    # Fact extraction's model; unset: the chat model.
    openai_extraction_model: str | None = None
    # A model that reads images (gpt-4o-mini, llava, qwen2.5vl); unset: no descriptions
    # from this server (images are still read by OCR where the extra is installed).
    openai_vision_model: str | None = None
    # How the extraction answer is constrained: a JSON schema (OpenAI, Azure, Ollama
    # 0.5+, vLLM) or JSON mode only (servers without schema support).
    openai_structured_output: StructuredOutput = "json_schema"
    # Seconds one call may take before it is retried (a local model on a CPU is slow).
    openai_timeout_seconds: float = Field(default=60.0, gt=0, le=3600)
    # Text in images read offline (docs/ocr.md): with the `ocr` extra installed ("auto"),
    # images are OCR'd on save and scanned PDF pages are read; "on" refuses to start
    # without the extra; "off" never reads them.
    metacortex_ocr: OcrKind = "auto"
    # A scanned PDF's pages read by OCR at most, and the seconds they may take together
    # (within the document's own METACORTEX_DOCUMENT_EXTRACT_SECONDS).
    metacortex_ocr_max_pages: int = Field(default=50, ge=0, le=1000)
    metacortex_ocr_seconds: float = Field(default=90.0, gt=0, le=3600)
    # Embedding requests in flight at once for bulk work (reembed, restore, eval
    # generate, migrate). On Vertex AI gemini-embedding-001 takes one text per request,
    # so this is what makes a re-embed fast; 429s are backed off per request.
    metacortex_embed_concurrency: int = Field(default=8, ge=1, le=64)

    # --- behaviour ------------------------------------------------------------------
    search_result_limit: int = Field(default=5, ge=1, le=20)
    default_filter_state: BranchState = BranchState.ACTIVE
    metacortex_dedupe_window_seconds: int = Field(default=900, ge=0)
    retrieval_event_logging_enabled: bool = False
    metacortex_event_retention_days: int = Field(default=90, ge=1)
    # Refusals happen before authentication: past this many events a minute they are
    # only counted, in one requests_rejected_aggregate event (kernel/rejections.py).
    metacortex_rejection_events_per_minute: int = Field(default=60, ge=0)
    # Ranking: share of semantic evidence in the fused score, and whether memories
    # written together in a topic lend each other evidence (docs/benchmarks.md).
    metacortex_dense_weight: float = Field(default=0.4, ge=0.0, le=1.0)
    metacortex_conversation_context: bool = True
    # A query word no memory of the space holds is matched to near words of the
    # semantic candidates (retrieval/typos.py, docs/benchmarks.md "Typo tolerance").
    metacortex_typo_tolerance: bool = True
    # When a memory happened, read from its text where not given, and the time a question
    # names, read into a range (metacortex/timeline): in these languages (dateparser's
    # codes; never detected, which costs seconds and tens of MB on the first call).
    metacortex_time_reading: bool = True
    metacortex_time_languages: CommaList = ("en",)
    # The cosine similarity from which a search match is strong on meaning alone
    # (retrieval/relevance.py); unset: the embedding model's measured one, if any.
    metacortex_strong_similarity: float | None = Field(default=None, ge=-1.0, le=1.0)
    # Offer the owner's erase_context tool on the admin endpoint /mcp (never on a client
    # endpoint or an OAuth grant). Off: erasing is the console's and `metacortex erase`'s.
    metacortex_admin_erase_tool: bool = False

    # --- documents (metacortex.documents, docs/DOCUMENTS.md) ---------------------------
    # What one document may cost to read: its size, its pages, the seconds its reader
    # process may run (killed past them), how many times its size its compressed parts
    # may unpack to, how deep its elements may nest, and the reader's address space.
    metacortex_document_max_bytes: int = Field(default=20 * 1024 * 1024, ge=1024)
    metacortex_document_max_pages: int = Field(default=1000, ge=1)
    metacortex_document_extract_seconds: float = Field(default=120.0, gt=0, le=3600)
    metacortex_document_max_expansion: int = Field(default=100, ge=1)
    # at most 256: libxml2 (HTML, DOCX) stops there itself
    metacortex_document_max_depth: int = Field(default=200, ge=8, le=256)
    # unset: sized to the machine (documents/limits.py ``sized_to_machine``); 0: unlimited
    metacortex_document_memory_mb: int | None = Field(default=None, ge=0)
    # The size (characters) passages are cut to: measured on LoCoMo (docs/DOCUMENTS.md).
    metacortex_document_passage_chars: int = Field(default=1000, ge=100, le=8000)
    # What one document may become: characters of text, passages, seconds to embed them.
    metacortex_document_max_chars: int = Field(default=5_000_000, ge=1_000)
    metacortex_document_max_passages: int = Field(default=5_000, ge=1)
    metacortex_document_embed_seconds: float = Field(default=300.0, gt=0, le=3600)
    # Documents read and embedded at once per server, and per credential; past that a
    # create_document is answered "busy, retry after N s" (docs/DOCUMENTS.md).
    metacortex_document_concurrency: int = Field(default=2, ge=1, le=64)
    metacortex_document_concurrency_per_credential: int = Field(default=1, ge=1, le=64)

    # --- importing conversation history (metacortex.importing, docs/importing.md) ------
    # What an export archive may hold: entries, bytes unpacked (as its directory says),
    # bytes of its conversations.json (as read), conversations, messages in one of them.
    metacortex_import_max_entries: int = Field(default=50_000, ge=1)
    metacortex_import_max_bytes: int = Field(default=10 * 1024**3, ge=1024)
    metacortex_import_max_json_bytes: int = Field(default=256 * 1024 * 1024, ge=1024)
    metacortex_import_max_conversations: int = Field(default=50_000, ge=1)
    metacortex_import_max_messages: int = Field(default=10_000, ge=1)

    # --- HTTP surface ---------------------------------------------------------------
    mcp_admin_token: SecretStr | None = None
    mcp_allowed_tools: CommaList = ()
    mcp_allowed_origins: CommaList = ()
    mcp_allowed_filter_states: CommaList = ()
    mcp_client_profiles_json: SecretStr | None = None
    # Client profiles kept in the store (created, paused, removed without a restart) are
    # cached per process: a change is in effect on every instance for the requests that
    # arrive more than this many seconds after it (metacortex.access.client_directory). Each
    # refresh reads one small marker record; 0 reads it on every request.
    metacortex_client_refresh_seconds: float = Field(default=10.0, ge=0, le=3600)
    metacortex_max_body_bytes: int = Field(default=limits.DEFAULT_MAX_BODY_BYTES, ge=1024)
    metacortex_rate_limit_per_minute: int = Field(default=300, ge=1)
    # The admin endpoint /mcp is the owner's own token, the one bulk imports use; its
    # limit is its own, sized for them (the one above is for client endpoints and grants).
    metacortex_admin_rate_limit_per_minute: int = Field(default=ADMIN_RATE_LIMIT_PER_MINUTE, ge=1)
    # `metacortex serve` connection hygiene (guard/connections.py): a request head must
    # arrive within the head timeout; a body may pause at most the body timeout between
    # chunks; past the connection cap (also fitted below RLIMIT_NOFILE) the longest-idle
    # connection is closed.
    metacortex_head_timeout_seconds: float = Field(default=10.0, gt=0, le=600)
    metacortex_body_timeout_seconds: float = Field(default=30.0, gt=0, le=600)
    # The whole request body must arrive within this, however it trickles (guard/request_guard.py;
    # also in the cloud): 408 and the connection closed past it.
    metacortex_body_deadline_seconds: float = Field(default=60.0, gt=0, le=3600)
    metacortex_max_connections: int = Field(default=1000, ge=8)
    # Which X-Forwarded-For entry names the client (guard/addresses.py): the N-th from the
    # right, or none (0: the socket peer). Unset: 0 for `metacortex serve`, 1 in the cloud
    # deployment (Google's front end appends the address it received the request from).
    metacortex_trusted_proxy_hops: int | None = Field(default=None, ge=0, le=8)
    # Extra Host header values accepted besides loopback (DNS-rebinding defence).
    metacortex_allowed_hosts: CommaList = ()
    metacortex_log_level: str = "INFO"
    # JSON lines (collected logs) or readable lines (a person at a terminal); auto: text
    # when `metacortex serve`'s stderr is a terminal, JSON otherwise and in the cloud.
    metacortex_log_format: LogFormat = "auto"

    # --- OAuth 2.1 for web connectors (metacortex.auth, metacortex.owner) ------------
    metacortex_oauth: bool = False
    # The public base URL (scheme://host[/prefix]) the issuer and resource URLs are built
    # from; unset, each request's own scheme and Host (already allow-listed) are used.
    metacortex_public_url: str | None = None
    metacortex_oauth_access_token_minutes: int = Field(default=60, ge=1, le=24 * 60)
    metacortex_oauth_refresh_token_days: int = Field(default=30, ge=1, le=365)
    metacortex_owner_session_hours: int = Field(default=12, ge=1, le=24 * 30)
    # Owner sign-in attempts a minute: per client address (and per known browser, through
    # its device cookie: owner/devices.py), and over all addresses together.
    metacortex_sign_in_per_minute: int = Field(default=5, ge=1, le=1000)
    metacortex_sign_in_per_minute_overall: int = Field(default=30, ge=1, le=10_000)
    # How long a person's invitation link works (`metacortex person invite`, which may
    # say otherwise with --days): owner/invitations.py.
    metacortex_invitation_days: int = Field(default=7, ge=1, le=90)
    # A repeat of the same refresh or code exchange within this many seconds gets the
    # first use's token pair again (a lost response, racing workers); a use after it
    # revokes the grant as reuse (auth/tokens.py). 0 turns the window off.
    metacortex_oauth_replay_grace_seconds: int = Field(default=60, ge=0, le=600)
    # What strangers can make the authorization server store (auth/limits.py): requests
    # per minute per client address and overall, and how long a dynamic registration
    # the owner never approves is kept.
    metacortex_oauth_registrations_per_minute_per_address: int = Field(default=10, ge=1)
    metacortex_oauth_registrations_per_minute: int = Field(default=60, ge=1)
    metacortex_oauth_authorizations_per_minute_per_address: int = Field(default=30, ge=1)
    metacortex_oauth_authorizations_per_minute: int = Field(default=120, ge=1)
    metacortex_oauth_unused_client_minutes: int = Field(default=60, ge=1, le=30 * 24 * 60)
    # Test only: an http origin on a loopback address (e.g. http://127.0.0.1:8123) from
    # which Client ID Metadata Documents may be fetched. Never set it in production.
    metacortex_oauth_cimd_test_origin: str | None = None

    # --- operator smoke test (``metacortex smoke``) -----------------------------------
    mcp_base_url: str = "http://127.0.0.1:8765/mcp"
    mcp_smoke_mode: Literal["admin-read-write", "browser-read-write", "search-only"] = (
        "admin-read-write"
    )
    mcp_smoke_token: SecretStr | None = None
    # The name the start-up banner exported the admin token under before it said
    # MCP_ADMIN_TOKEN; read as an alias by the client-side commands only (cli/endpoint_token.py).
    metacortex_token: SecretStr | None = None
    mcp_smoke_origin: str | None = None
    mcp_smoke_url_token: bool = False

    @field_validator(
        "mcp_allowed_tools",
        "mcp_allowed_origins",
        "mcp_allowed_filter_states",
        "metacortex_allowed_hosts",
        "metacortex_time_languages",
        mode="before",
    )
    @classmethod
    def _split_commas(cls, value: object) -> object:
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    @field_validator("metacortex_strong_similarity", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: object) -> object:
        """``METACORTEX_STRONG_SIMILARITY=`` (as ``functions/.env.example`` lists it) means
        unset: the embedding model's measured threshold."""
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("metacortex_time_languages")
    @classmethod
    def _some_language(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("name at least one language, e.g. en (dateparser's codes)")
        return value

    @field_validator("metacortex_data_dir")
    @classmethod
    def _absolute_data_dir(cls, value: Path) -> Path:
        # One resolution for every command (`--data-dir`, METACORTEX_DATA_DIR): `~` is
        # the home directory, a relative path is taken from where the command runs.
        return value.expanduser().absolute()

    @classmethod
    def environment_names(cls) -> frozenset[str]:
        """Every environment variable these settings read, upper case (case is ignored)."""
        names: set[str] = set()
        for field, info in cls.model_fields.items():
            if info.exclude:
                continue  # set by the composition root, never by the environment
            choices = getattr(info.validation_alias, "choices", None)
            names.update(str(choice).upper() for choice in choices or [field])
        return frozenset(names)

    @property
    def store_kind(self) -> StoreKind:
        if self.metacortex_store is not None:
            return self.metacortex_store
        return "sqlite" if self.deployment == "local" else "firestore"

    @property
    def embeddings_kind(self) -> EmbeddingsKind:
        if self.metacortex_embeddings is not None:
            return self.metacortex_embeddings
        return "local" if self.deployment == "local" else "gemini"

    @property
    def trusted_proxy_hops(self) -> int:
        if self.metacortex_trusted_proxy_hops is not None:
            return self.metacortex_trusted_proxy_hops
        return 0 if self.deployment == "local" else 1

    @property
    def generation_kind(self) -> GenerationKind:
        if self.metacortex_generation is not None:
            return self.metacortex_generation
        if self.deployment == "cloud" or self.metacortex_use_gemini_generation:
            return "gemini"
        return "none"

    @property
    def uses_gemini_generation(self) -> bool:
        return self.generation_kind == "gemini"

    @property
    def uses_openai(self) -> bool:
        return self.embeddings_kind == "openai" or self.generation_kind == "openai"

    @property
    def extracts_facts(self) -> bool:
        """On wherever a chat model is configured, unless turned off; asked for ("on",
        "gemini") without one, ``composition.check_configuration`` refuses to start."""
        if self.metacortex_extraction == "off":
            return False
        if self.metacortex_extraction == "auto":
            return self.generation_kind != "none"
        return True

    @property
    def describes_images(self) -> bool:
        """Whether a model describes saved images: Gemini generation always has one; an
        OpenAI-compatible server only with OPENAI_VISION_MODEL."""
        if self.generation_kind == "gemini":
            return True
        return self.generation_kind == "openai" and bool(self.openai_vision_model)

    @property
    def sqlite_path(self) -> Path:
        return self.metacortex_data_dir / "metacortex.sqlite3"

    @property
    def admin_token_path(self) -> Path:
        return self.metacortex_data_dir / "admin-token"


class ApplicationDirs(BaseSettings):
    """Where other applications keep their configuration: their own variables, read only
    by ``metacortex init`` to find the file it writes (``appconfig/targets.py``)."""

    model_config = SettingsConfigDict(extra="ignore", frozen=True)

    home: Path = Field(default_factory=Path.home)
    appdata: Path | None = None  # Windows: %APPDATA% (Claude Desktop, VS Code)
    codex_home: Path | None = None  # Codex: $CODEX_HOME, else ~/.codex
    xdg_config_home: Path | None = None  # Linux: $XDG_CONFIG_HOME, else ~/.config
