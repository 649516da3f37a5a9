"""Text in images read offline (issue 40, part 2), with the real RapidOCR models the
``ocr`` extra's wheel bundles, on images Pillow renders here (``bench/ocr_images.py``)."""

from __future__ import annotations

import base64
import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from metacortex import ocr
from metacortex.composition import build_generation, build_service
from metacortex.config import Settings
from metacortex.errors import FailedPrecondition, InvalidArgument
from metacortex.service import Access, MemoryService
from metacortex.storage.sqlite import SQLiteStore
from tests.fakes import HashingEmbedder
from tests.openai_wire import FakeOpenAI, serve_openai
from tests.test_openai_providers import openai_settings

pytest.importorskip("rapidocr", reason="OCR TESTS SKIPPED: the ocr extra is not installed")

from bench.ocr_images import render, screenshot

SCREEN = [
    "Build #4182 failed",
    "error TS2345: Argument of type string",
    "at checkout/payment.ts line 88",
]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.fixture(scope="module")
def engine() -> ocr.OcrEngine:
    return ocr.OcrEngine()


def test_the_text_of_a_rendered_image_is_read_line_by_line(engine: ocr.OcrEngine) -> None:
    text = engine.read(screenshot(SCREEN))

    assert text.splitlines() == SCREEN


def test_a_page_upside_down_is_read_the_right_way_up(engine: ocr.OcrEngine) -> None:
    text = engine.read(render(["Quarterly budget review", "Owner Dana Whitfield"], angle=180))

    # Each line is turned by the direction model, and the rows are read bottom first.
    assert text.splitlines() == ["Quarterly budget review", "Owner Dana Whitfield"]


def test_a_screenshot_saved_offline_is_found_by_its_text(tmp_path: Path) -> None:
    """The offline default (SQLite, the local embedding model, OCR): an image saved with
    no words of the caller's is found by a search for words only the image shows."""
    settings = Settings(_env_file=None, metacortex_data_dir=tmp_path)  # type: ignore[call-arg]
    service = build_service(settings)
    admin = Access.admin()
    try:
        for note in (
            "The payment service deploys on Tuesdays after the review.",
            "Checkout latency went down after the cache change.",
            "Dana owns the build pipeline and its alerts.",
        ):
            service.save(admin, content=note)
        saved = service.save(
            admin,
            image_base64=b64(screenshot(SCREEN)),
            image_mime_type="image/png",
            artifact_refs=["file:///screens/build-4182.png"],
        )
        found = service.search(admin, query="TS2345 error in payment.ts")
    finally:
        service.store.close()

    item = saved["item"]
    assert item["content"].startswith(ocr.TEXT_HEADING)
    assert "error TS2345" in item["content"]
    assert item["metadata"]["artifact_refs"] == ["file:///screens/build-4182.png"]
    assert found["matches"][0]["id"] == item["id"]


def test_a_vision_model_s_description_is_added_to_the_text_read(tmp_path: Path) -> None:
    fake = FakeOpenAI(flavour="ollama")
    store = SQLiteStore(tmp_path / "m.sqlite3")
    with serve_openai(fake) as root:
        _, reader = build_generation(openai_settings("ollama", root))
        assert reader is not None
        service = MemoryService(store, HashingEmbedder(), merger=_merger(), describer=reader)
        saved = service.save(
            Access.admin(), image_base64=b64(screenshot(SCREEN)), image_mime_type="image/png"
        )
    store.close()

    content = saved["item"]["content"]
    assert content.startswith(fake.description)
    assert f"{ocr.TEXT_HEADING}\n" + "\n".join(SCREEN) in content


def test_an_image_with_no_text_and_no_words_of_the_caller_is_refused_and_nothing_saved(
    tmp_path: Path, engine: ocr.OcrEngine
) -> None:
    blank = render([" "], size=40)
    store = SQLiteStore(tmp_path / "m.sqlite3")
    service = MemoryService(
        store, HashingEmbedder(), merger=_merger(), describer=ocr.ImageReader(engine, None)
    )
    try:
        with pytest.raises(InvalidArgument, match="no text could be read in the image"):
            service.save(Access.admin(), image_base64=b64(blank), image_mime_type="image/png")
        with_words = service.save(
            Access.admin(),
            content="A blank page",
            image_base64=b64(blank),
            image_mime_type="image/png",
        )
        listed = service.list_memories(Access.admin())["items"]
    finally:
        store.close()

    assert with_words["item"]["content"] == "A blank page"
    assert [item["id"] for item in listed] == [with_words["item"]["id"]]


def test_a_picture_too_large_is_refused_before_it_is_decoded(engine: ocr.OcrEngine) -> None:
    from PIL import Image

    out = io.BytesIO()
    Image.new("1", (10_000, 5_000)).save(out, "PNG")  # 50 MP in a small file

    with pytest.raises(InvalidArgument, match="10000x5000 pixels; text is read in images of at"):
        engine.read(out.getvalue())


def test_bytes_that_are_no_picture_are_refused_clearly(engine: ocr.OcrEngine) -> None:
    with pytest.raises(InvalidArgument, match="cannot be decoded"):
        engine.read(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)


def test_with_ocr_off_and_no_vision_model_an_image_save_says_what_to_configure(
    tmp_path: Path,
) -> None:
    settings = Settings(_env_file=None, metacortex_ocr="off")  # type: ignore[call-arg]
    _, reader = build_generation(settings)
    store = SQLiteStore(tmp_path / "m.sqlite3")
    service = MemoryService(store, HashingEmbedder(), merger=_merger(), describer=reader)
    try:
        with pytest.raises(
            FailedPrecondition, match=r'install OCR \(pip install "metacortex\[ocr\]"'
        ):
            service.save(
                Access.admin(), image_base64=b64(screenshot(SCREEN)), image_mime_type="image/png"
            )
    finally:
        store.close()


NO_NETWORK = """
import socket, sys
def refuse(event: str, args: object) -> None:
    if event in ("socket.connect", "socket.getaddrinfo", "socket.gethostbyname",
                 "urllib.Request", "http.client.connect"):
        raise OSError(f"network refused in this test: {event}")
sys.addaudithook(refuse)
from metacortex import ocr
from bench.ocr_images import screenshot
print(ocr.OcrEngine().read(screenshot(["Offline ZQX-4821 reading"])))
try:
    socket.create_connection(("127.0.0.1", 9), timeout=1)
except OSError as error:
    print("refused:", "network refused" in str(error))
"""


def test_ocr_reads_with_every_connection_refused_and_writes_no_model_file() -> None:
    """The bundled models are named by path, so RapidOCR never reaches its download
    branch: the whole read runs with every network call refused by an audit hook."""
    models = ocr.model_dir()
    before = sorted(path.name for path in models.iterdir())
    result = subprocess.run(  # noqa: S603 - our own interpreter, fixed script
        [sys.executable, "-c", NO_NETWORK],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[1],
        check=False,
    )

    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.splitlines() == ["Offline ZQX-4821 reading", "refused: True"]
    assert sorted(path.name for path in models.iterdir()) == before


def _merger() -> Any:
    from metacortex.providers.offline_merge import SentenceUnionMerger

    return SentenceUnionMerger()
