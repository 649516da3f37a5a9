"""Images of rendered text for the OCR tests and benchmark (``bench/ocr.py``).

Each image is a screenshot-, slide-, receipt- or whiteboard-like card: a few lines of
text, one of them a key phrase (a made-up identifier a search should find), drawn
with Pillow in a given font and size, then optionally rotated, blurred and sprinkled
with noise. Fonts: Pillow's own bundled font (always there), and the DejaVu fonts
Debian's ``fonts-dejavu-core`` installs where they exist.
"""

from __future__ import annotations

import io
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from PIL import Image, ImageDraw, ImageFilter, ImageFont

DEJAVU: Final = Path("/usr/share/fonts/truetype/dejavu")
DEJAVU_FONTS: Final = (
    "DejaVuSans.ttf",
    "DejaVuSerif.ttf",
    "DejaVuSansMono.ttf",
    "DejaVuSans-Bold.ttf",
)
WORDS: Final = (
    "deploy staging invoice total receipt meeting agenda budget review release notes "
    "customer account balance payment due server error build failed retry queue "
    "migration database backup schedule owner launch plan quarter roadmap ticket "
    "priority status blocked approved draft summary action items next steps"
).split()


@dataclass(frozen=True, slots=True)
class Sample:
    """One generated image and what it shows."""

    png: bytes
    lines: tuple[str, ...]
    key: str
    font: str
    size: int
    angle: float
    noise: float

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def fonts() -> list[str]:
    """The font names available: ``default`` (Pillow's) and the DejaVu ones present."""
    return ["default", *(name for name in DEJAVU_FONTS if (DEJAVU / name).is_file())]


def _font(name: str, size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    if name == "default":
        return ImageFont.load_default(size=size)
    return ImageFont.truetype(str(DEJAVU / name), size)


def key_phrase(rng: random.Random) -> str:
    """A made-up identifier: letters and digits no corpus holds by chance."""
    letters = "".join(rng.choice("BCDFGHJKLMNPQRSTVWXZ") for _ in range(3))
    return f"{letters}-{rng.randint(1000, 9999)}"


def render(
    lines: list[str],
    *,
    font: str = "default",
    size: int = 28,
    angle: float = 0.0,
    noise: float = 0.0,
    seed: int = 0,
) -> bytes:
    """``lines`` drawn dark on light as a PNG; ``angle`` degrees of rotation, ``noise``
    the share of pixels flipped to random grey, then a slight blur when there is noise."""
    rng = random.Random(seed)
    face = _font(font, size)
    width = max(int(face.getlength(line)) for line in lines) + 2 * size
    height = (len(lines) + 1) * int(size * 1.6)
    image = Image.new("RGB", (width, height), (250, 250, 248))
    draw = ImageDraw.Draw(image)
    for row, line in enumerate(lines):
        draw.text(
            (size, int(size * 0.6) + row * int(size * 1.6)), line, fill=(20, 20, 30), font=face
        )
    if angle:
        image = image.rotate(angle, expand=True, fillcolor=(250, 250, 248))
    if noise:
        pixels = image.load()
        assert pixels is not None
        for _ in range(int(image.width * image.height * noise)):
            x, y = rng.randrange(image.width), rng.randrange(image.height)
            grey = rng.randrange(256)
            pixels[x, y] = (grey, grey, grey)
        image = image.filter(ImageFilter.GaussianBlur(0.6))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def sample(index: int, *, font: str, size: int, angle: float, noise: float) -> Sample:
    """The ``index``-th card: a title, the key phrase in a sentence, two lines of words."""
    rng = random.Random(index)
    key = key_phrase(rng)
    lines = [
        " ".join(rng.choice(WORDS) for _ in range(3)).capitalize(),
        f"Reference {key} {rng.choice(WORDS)} {rng.choice(WORDS)}",
        " ".join(rng.choice(WORDS) for _ in range(5)),
        f"Total {rng.randint(10, 999)}.{rng.randint(10, 99)} due {rng.randint(1, 28)} March",
    ]
    png = render(lines, font=font, size=size, angle=angle, noise=noise, seed=index)
    return Sample(png, tuple(lines), key, font, size, angle, noise)


def screenshot(lines: list[str]) -> bytes:
    """A plain screenshot-like image of ``lines`` in Pillow's own font."""
    return render(lines, size=24)
