"""Text in images, read offline: RapidOCR with the PP-OCR models its wheel bundles.

The optional extra ``pip install "metacortex[ocr]"`` installs ``rapidocr`` (Apache-2.0;
its wheel carries the PP-OCR detection, direction and recognition ONNX models) and
``opencv-python-headless``; it runs on the onnxruntime the local embedder already uses.
Each model is named by its path inside the installed package, so RapidOCR never takes
the branch that downloads one; nothing here touches the network (tested with every
connection refused, docs/ocr.md).

Images are decoded by Pillow here, never by RapidOCR's own loader (it fetches a string
that looks like a URL): a picture of more than ``MAX_PIXELS`` is refused before it is
decoded, and one larger than ``MAX_SIDE`` pixels a side is scaled down first, so a
hostile image costs bounded memory and time.
"""

from __future__ import annotations

import importlib.util
import io
import logging
import os
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from metacortex.errors import ConfigurationError, InvalidArgument, Unavailable

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from metacortex.providers.base import ImageDescriber

logger = logging.getLogger(__name__)

# The bundled models (rapidocr 3.x): PP-OCRv6 small detection and recognition
# (multilingual Latin and Chinese), PP-OCRv4 mobile text direction.
DET_MODEL: Final = "PP-OCRv6_det_small.onnx"
CLS_MODEL: Final = "ch_ppocr_mobile_v2.0_cls_mobile.onnx"
REC_MODEL: Final = "PP-OCRv6_rec_small.onnx"
# A picture larger than this is refused unread (a decompression bomb is a small file).
MAX_PIXELS: Final = 40_000_000
# Larger pictures are scaled down to this many pixels a side before they are read.
MAX_SIDE: Final = 4000
# The side, in pixels, a scanned page is detected at (see OcrEngine).
DET_PAGE_SIDE: Final = 1280
# Lines the recognizer is less sure of than this are dropped.
MIN_SCORE: Final = 0.5
# Said before the text an image holds, in the memory's retrieval text.
TEXT_HEADING: Final = "Text in the image:"
INSTALL_HINT: Final = 'install the OCR extra: pip install "metacortex[ocr]"'


def installed() -> bool:
    """Whether the ``ocr`` extra is installed (without importing it)."""
    try:
        return all(importlib.util.find_spec(name) is not None for name in ("rapidocr", "cv2"))
    except (ImportError, ValueError):
        return False


def model_dir() -> Path:
    spec = importlib.util.find_spec("rapidocr")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigurationError(f"OCR is not installed: {INSTALL_HINT}")
    return Path(next(iter(spec.submodule_search_locations))) / "models"


@dataclass(frozen=True, slots=True)
class OcrLine:
    text: str
    score: float
    # The line's box: left, top, right, bottom, in the image's pixels.
    left: float
    top: float
    right: float
    bottom: float


def rows(lines: Sequence[OcrLine], *, upside_down: bool = False) -> list[list[OcrLine]]:
    """Lines top to bottom in rows: lines whose middles lie within half a line's height
    of each other are one row, read left to right (``upside_down``: the picture's
    bottom row first, each read right to left)."""
    out: list[list[OcrLine]] = []
    ordered = sorted(lines, key=lambda item: (item.top + item.bottom) / 2, reverse=upside_down)
    for line in ordered:
        if out and _level(out[-1][-1], line):
            out[-1].append(line)
            continue
        out.append([line])
    return [sorted(row, key=lambda item: item.left, reverse=upside_down) for row in out]


def text_of(lines: Sequence[OcrLine]) -> str:
    """The text of lines in reading order (``OcrEngine.lines``), one row a line: a line
    level with the one before it is joined to it."""
    out: list[str] = []
    previous: OcrLine | None = None
    for line in lines:
        if previous is not None and _level(previous, line):
            out[-1] = f"{out[-1]} {line.text}"
        else:
            out.append(line.text)
        previous = line
    return "\n".join(out)


def _level(one: OcrLine, other: OcrLine) -> bool:
    """Whether two lines' middles lie within half a line's height of each other."""
    height = max(one.bottom - one.top, other.bottom - other.top, 1.0)
    return abs((one.top + one.bottom) / 2 - (other.top + other.bottom) / 2) <= height / 2


def decode(image: bytes) -> npt.NDArray[np.uint8]:
    """``image`` (PNG, JPEG, WebP, GIF's first frame, ...) as an RGB array, scaled down
    to ``MAX_SIDE``; ``InvalidArgument`` for an unreadable picture or one too large."""
    import numpy as np
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(image)) as picture:
            width, height = picture.size
            if width * height > MAX_PIXELS:
                raise InvalidArgument(
                    f"the image is {width}x{height} pixels; text is read in images of at most "
                    f"{MAX_PIXELS:,} pixels"
                )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # Pillow's own bomb warning: checked above
                picture.draft("RGB", (MAX_SIDE, MAX_SIDE))  # JPEG: decode at a smaller scale
                rgb = picture.convert("RGB")
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError):
        raise InvalidArgument("the image cannot be decoded to read its text") from None
    if max(rgb.size) > MAX_SIDE:
        rgb.thumbnail((MAX_SIDE, MAX_SIDE))
    return np.asarray(rgb, dtype=np.uint8)


class OcrEngine:
    """RapidOCR over the bundled models, loaded on the first read; reads one image at a
    time (RapidOCR keeps per-call state)."""

    def __init__(self, *, threads: int | None = None, page: bool = False) -> None:
        self._threads = threads or min(2, os.cpu_count() or 1)
        # A whole page (a scan) is detected at most DET_PAGE_SIDE pixels a side (the
        # lines are then recognized at full resolution); an image (a screenshot, a
        # photo) keeps RapidOCR's default, which enlarges small images.
        self._page = page
        self._lock = threading.Lock()
        self._engine: Any = None
        self._turned: list[bool] = []

    def _load(self) -> Any:
        if self._engine is None:
            directory = model_dir()
            paths = {name: directory / name for name in (DET_MODEL, CLS_MODEL, REC_MODEL)}
            missing = [str(path) for path in paths.values() if not path.is_file()]
            if missing:
                # Never left to RapidOCR: a missing model is where it would download one.
                raise ConfigurationError(
                    f"the OCR models are missing ({', '.join(missing)}): the installed "
                    f"rapidocr is not the 3.x wheel that bundles them; {INSTALL_HINT}"
                )
            from rapidocr import RapidOCR

            logging.getLogger("RapidOCR").setLevel(logging.ERROR)
            engine = RapidOCR(
                params={
                    "Global.log_level": "error",
                    "Global.model_root_dir": str(directory),
                    "Det.model_path": str(paths[DET_MODEL]),
                    "Cls.model_path": str(paths[CLS_MODEL]),
                    "Rec.model_path": str(paths[REC_MODEL]),
                    "EngineConfig.onnxruntime.intra_op_num_threads": self._threads,
                    "EngineConfig.onnxruntime.inter_op_num_threads": 1,
                    **(
                        {"Det.limit_type": "max", "Det.limit_side_len": DET_PAGE_SIDE}
                        if self._page
                        else {}
                    ),
                }
            )
            classify = engine.cls_and_rotate

            def recording(crops: Any) -> Any:
                # Which lines the direction model turned half round (RapidOCR's output
                # drops it): a page whose lines mostly were is read bottom row first.
                turned, result = classify(crops)
                self._turned = [label == "180" for label, _ in result.cls_res or ()]
                return turned, result

            engine.cls_and_rotate = recording  # type: ignore[method-assign,assignment]
            self._engine = engine
        return self._engine

    def lines(self, image: bytes) -> list[OcrLine]:
        """The text lines found in ``image``, in reading order."""
        return self.lines_of_array(decode(image))

    def lines_of_array(self, pixels: npt.NDArray[np.uint8]) -> list[OcrLine]:
        # RapidOCR takes OpenCV's channel order.
        bgr = pixels[:, :, ::-1].copy()
        failure: str | None = None
        with self._lock:
            engine = self._load()
            self._turned = []
            try:
                result = engine(bgr)
            except Exception as error:  # noqa: BLE001 - the runtime's own errors, named below
                # Raised outside the except block: no chained trace reaches a client.
                failure = type(error).__name__
        if failure is not None:
            raise Unavailable(f"OCR could not read the image ({failure})")
        texts = getattr(result, "txts", None) or ()
        scores = getattr(result, "scores", None) or ()
        boxes = getattr(result, "boxes", None)
        lines: list[OcrLine] = []
        for index, (text, score) in enumerate(zip(texts, scores, strict=False)):
            if not str(text).strip() or float(score) < MIN_SCORE or boxes is None:
                continue
            xs = [float(point[0]) for point in boxes[index]]
            ys = [float(point[1]) for point in boxes[index]]
            lines.append(
                OcrLine(str(text).strip(), float(score), min(xs), min(ys), max(xs), max(ys))
            )
        # A picture upside down: the direction model turned most of its lines.
        upside_down = 2 * sum(self._turned) > len(self._turned) > 0
        return [line for row in rows(lines, upside_down=upside_down) for line in row]

    def read(self, image: bytes) -> str:
        """The text in ``image``, one row a line ("" when it holds none)."""
        return text_of(self.lines(image))


_shared_lock = threading.Lock()
_shared: OcrEngine | None = None


def shared_engine() -> OcrEngine:
    """The process-wide engine (its models are loaded once, at the first read)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = OcrEngine()
        return _shared


class ImageReader:
    """``ImageDescriber``: the text OCR reads in an image and, where a model that reads
    images is configured, its description; either may be absent, not both."""

    def __init__(self, ocr: OcrEngine | None, vision: ImageDescriber | None) -> None:
        if ocr is None and vision is None:
            raise ValueError("an image reader needs OCR or a vision model")
        self._ocr = ocr
        self._vision = vision

    def describe(self, image: bytes, mime_type: str) -> str:
        parts: list[str] = []
        if self._vision is not None:
            parts.append(self._vision.describe(image, mime_type).strip())
        if self._ocr is not None:
            text = self._ocr.read(image)
            if text:
                parts.append(f"{TEXT_HEADING}\n{text}")
        return "\n\n".join(part for part in parts if part)
