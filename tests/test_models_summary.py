"""The start-up banner says which models run and, where a chat model is configured,
that fact extraction is on and what it costs per save (issue 40)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from metacortex.access.profiles import load_profiles
from metacortex.cli.banner import banner
from metacortex.config import Settings
from metacortex.providers.summary import models_summary


def shown(tmp_path: Path, **values: Any) -> list[str]:
    settings = Settings(_env_file=None, **values)  # type: ignore[call-arg]
    text = banner(
        url="http://127.0.0.1:8765",
        data_dir=tmp_path,
        profiles=load_profiles(settings),
        token_path=tmp_path / "admin-token",
        new_token=None,
        passphrase_set=True,
        command=lambda words: f"mc {words}",
        models=models_summary(settings, ocr_installed=True),
    )
    return [line.strip() for line in text.splitlines() if line.startswith("  models")]


def test_the_offline_default_adds_no_line_to_the_banner(tmp_path: Path) -> None:
    """Nothing is billed there, and the first start's banner keeps to a screen."""
    assert shown(tmp_path) == []


def test_a_chat_model_turns_extraction_on_and_the_banner_says_what_a_save_costs(
    tmp_path: Path,
) -> None:
    lines = shown(
        tmp_path,
        metacortex_generation="openai",
        openai_base_url="http://127.0.0.1:11434/v1",
        openai_chat_model="llama3.2",
        openai_vision_model="llava",
    )

    assert lines[0].endswith("merges openai:llama3.2; images OCR (local) + openai:llava")
    assert lines[1].startswith(
        "models            fact extraction ON with openai:llama3.2: one chat call per "
        "save_context (about 600 prompt tokens"
    )
    assert lines[1].endswith("METACORTEX_EXTRACTION=off turns it off.")


def test_turned_off_the_banner_says_so(tmp_path: Path) -> None:
    lines = shown(
        tmp_path,
        metacortex_generation="openai",
        azure_openai_endpoint="https://r.openai.azure.com",
        openai_api_key="k",
        openai_chat_model="gpt4o-deployment",
        metacortex_extraction="off",
    )

    assert "merges azure-openai:gpt4o-deployment" in lines[0]
    assert lines[1] == "models            fact extraction off (METACORTEX_EXTRACTION=off)"
