"""Fixtures shared by every test package."""

from __future__ import annotations

import base64
import importlib.util

import pytest

# A 1×1 PNG and a 1×1 GIF, for image-write tests.
PNG_1X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
GIF_1X1 = base64.b64decode("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7")


@pytest.fixture
def png_base64() -> str:
    return base64.b64encode(PNG_1X1).decode()


@pytest.fixture
def gif_base64() -> str:
    return base64.b64encode(GIF_1X1).decode()


if importlib.util.find_spec("tests.firestore_support") is not None:
    # The Firestore emulator fixtures; registered as a plugin so pytest rewrites its asserts.
    pytest_plugins = ["tests.firestore_support"]
else:

    @pytest.fixture
    def firestore_store_factory() -> None:
        pytest.skip("FIRESTORE STORE NOT AVAILABLE: tests/firestore_support.py is missing")
