"""Image payload checks: base64 that decodes, a supported type, bytes that match it."""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass
from typing import Final

from metacortex.domain.limits import MAX_IMAGE_BASE64_CHARS, MAX_IMAGE_BYTES
from metacortex.errors import InvalidArgument

SUPPORTED_IMAGE_TYPES: Final = ("image/png", "image/jpeg", "image/webp", "image/gif")


@dataclass(frozen=True, slots=True)
class ImagePayload:
    data: bytes
    mime_type: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


def _sniff(data: bytes) -> str | None:
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    return None


def decode_image(image_base64: str, mime_type: str | None) -> ImagePayload:
    if not mime_type:
        raise InvalidArgument(
            "image_mime_type is required with image_base64 "
            f"(one of {', '.join(SUPPORTED_IMAGE_TYPES)})"
        )
    mime = mime_type.strip().lower()
    if mime == "image/jpg":
        mime = "image/jpeg"
    if mime not in SUPPORTED_IMAGE_TYPES:
        raise InvalidArgument(
            f"image_mime_type {mime_type!r} is not supported; "
            f"use one of {', '.join(SUPPORTED_IMAGE_TYPES)}"
        )
    text = image_base64.strip()
    if text.startswith("data:") and "," in text:
        text = text.split(",", 1)[1]
    if len(text) > MAX_IMAGE_BASE64_CHARS:
        raise InvalidArgument(
            f"image_base64 is {len(text)} characters; the limit is {MAX_IMAGE_BASE64_CHARS} "
            f"({MAX_IMAGE_BYTES // 1024} KiB of image bytes)"
        )
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidArgument("image_base64 is not valid base64") from None
    if not data:
        raise InvalidArgument("image_base64 decodes to no bytes")
    if len(data) > MAX_IMAGE_BYTES:
        raise InvalidArgument(f"image is larger than {MAX_IMAGE_BYTES // 1024} KiB")
    sniffed = _sniff(data)
    if sniffed is None:
        raise InvalidArgument("image bytes are not a PNG, JPEG, WebP or GIF image")
    if sniffed != mime:
        raise InvalidArgument(f"image bytes are {sniffed} but image_mime_type says {mime}")
    return ImagePayload(data=data, mime_type=mime)
