"""The REAL Firestore emulator for tests (registered in tests/conftest.py via pytest_plugins).

- ``firestore_emulator`` (session): starts Google's emulator JAR directly with Java
  on a free loopback port, waits until it says it is running (no sleeps), and
  stops it at the end of the session. Without Java or the JAR every test that
  needs it is skipped with one loud reason, and the terminal summary says so.
- ``firestore_store_factory`` (function): wipes the emulator's ``demo-`` project,
  points the Google client at the emulator for the duration of the test only,
  and returns ``() -> FirestoreStore``; every call opens the SAME database again
  (as a second server process would).

``python -m tests.firestore_support`` prints whether the emulator can run here
(exit status 0 when it can) for CI scripts.
"""

from __future__ import annotations

import functools
import os
import shutil
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final, Protocol

import pytest
from google.cloud import firestore

from metacortex.config import Settings
from metacortex.storage.firestore import FirestoreStore
from tests.processes import WatchedProcess

PROJECT: Final = "demo-metacortex-test"
EMULATOR_MAIN: Final = "com.google.cloud.datastore.emulator.firestore.CloudFirestore"
JAR_IN_SDK: Final = Path("platform/cloud-firestore-emulator/cloud-firestore-emulator.jar")
_READY_LINE: Final = "Dev App Server is now running"
_START_TIMEOUT_S: Final = 90.0


@dataclass
class _Report:
    """What happened to the emulator in this session, for the terminal summary."""

    requested: bool = False
    host: str | None = None
    unavailable: str | None = None
    tests_using_it: int = 0


_report = _Report()


def skip_line(reason: str) -> str:
    return f"FIRESTORE EMULATOR UNAVAILABLE: {reason} — Firestore store tests SKIPPED"


@functools.cache
def find_emulator() -> tuple[list[str] | None, str]:
    """The command that starts the emulator (without host/port), or why there is none."""
    java = shutil.which("java")
    if java is None:
        return None, "no `java` on PATH (the emulator is a Java program)"
    override = os.environ.get("FIRESTORE_EMULATOR_JAR")
    if override:
        jar = Path(override)
    else:
        gcloud = shutil.which("gcloud")
        if gcloud is None:
            return None, "no `gcloud` on PATH to locate cloud-firestore-emulator.jar"
        try:
            sdk_root = subprocess.run(  # noqa: S603 - fixed argv, no shell
                [gcloud, "info", "--format=value(installation.sdk_root)"],
                capture_output=True,
                text=True,
                timeout=60,
                check=True,
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError) as error:
            return None, f"`gcloud info` failed: {error}"
        jar = Path(sdk_root) / JAR_IN_SDK
    if not jar.is_file():
        return None, (
            f"{jar} does not exist (install it with "
            "`gcloud components install cloud-firestore-emulator`)"
        )
    return [java, "-cp", str(jar), EMULATOR_MAIN, "start"], ""


def emulator_availability() -> str:
    """One line for CI logs: can the emulator run on this machine?"""
    command, why = find_emulator()
    if command is None:
        return skip_line(why)
    return f"FIRESTORE EMULATOR AVAILABLE: {command[2]}"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class Emulator:
    """One emulator JVM; the PID we hold is the JVM itself, so stopping it stops it."""

    def __init__(self, command: list[str]) -> None:
        self.port = _free_port()
        self.host = f"127.0.0.1:{self.port}"
        self._process = WatchedProcess(
            [*command, "--host=127.0.0.1", f"--port={self.port}"], _READY_LINE
        )

    def wait_ready(self) -> None:
        self._process.wait_ready(_START_TIMEOUT_S, f"the Firestore emulator on {self.host}")
        with urllib.request.urlopen(f"http://{self.host}/", timeout=10) as response:
            if response.status != 200:
                raise RuntimeError(f"emulator on {self.host} answered {response.status}")

    @property
    def pid(self) -> int:
        return self._process.pid

    def wipe(self, project: str) -> None:
        url = f"http://{self.host}/emulator/v1/projects/{project}/databases/(default)/documents"
        request = urllib.request.Request(url, method="DELETE")
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
            response.read()

    def stop(self) -> None:
        self._process.stop()


@pytest.fixture(scope="session")
def firestore_emulator() -> Iterator[Emulator]:
    _report.requested = True
    command, why = find_emulator()
    if command is None:
        _report.unavailable = why
        pytest.skip(skip_line(why))
    emulator = Emulator(command)
    try:
        emulator.wait_ready()
    except (RuntimeError, OSError) as error:
        _report.unavailable = str(error)
        pytest.skip(skip_line(str(error)))
    _report.host = emulator.host
    try:
        yield emulator
    finally:
        emulator.stop()


class FirestoreStoreFactory(Protocol):
    def __call__(self, *, collection: str | None = None, **options: int) -> FirestoreStore:
        """No arguments: ``FirestoreStore.from_settings`` (what production runs).
        ``collection`` or store options (``nearest_limit``, ``lexical_budget``): the
        constructor, on a client of the same emulator project."""
        ...


def firestore_settings(collection: str = "memory_vectors") -> Settings:
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        metacortex_store="firestore",
        google_cloud_project=PROJECT,
        firestore_database="(default)",
        memory_collection=collection,
    )


@pytest.fixture
def firestore_store_factory(
    firestore_emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> Iterator[FirestoreStoreFactory]:
    """Opens the same, freshly wiped emulator database on each call."""
    firestore_emulator.wipe(PROJECT)
    # The Google client reads this when a client is built; monkeypatch restores it.
    monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", firestore_emulator.host)
    opened: list[FirestoreStore] = []

    def make(*, collection: str | None = None, **options: int) -> FirestoreStore:
        if collection is None and not options:
            store = FirestoreStore.from_settings(firestore_settings())
        else:
            store = FirestoreStore(
                firestore.Client(project=PROJECT), collection or "memory_vectors", **options
            )
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test that uses the emulator ``firestore``; skip them all up front when
    it cannot run here, so the skip is reported once per file, not once per test."""
    needing = []
    for item in items:
        if "firestore_store_factory" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.firestore)
        if item.get_closest_marker("firestore") is not None:
            needing.append(item)
    if not needing:
        return
    command, why = find_emulator()
    if command is None:
        _report.requested = True
        _report.unavailable = why
        for item in needing:
            item.add_marker(pytest.mark.skip(reason=skip_line(why)))


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("firestore") is not None:
        _report.tests_using_it += 1


def pytest_sessionfinish(session: pytest.Session) -> None:
    """In a pytest-xdist worker: hand this worker's report to the controller."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["firestore_emulator"] = asdict(_report)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """In the pytest-xdist controller: fold each worker's report into the summary's."""
    seen = getattr(node, "workeroutput", {}).get("firestore_emulator")
    if not seen:
        return
    _report.requested = _report.requested or seen["requested"]
    _report.unavailable = _report.unavailable or seen["unavailable"]
    _report.host = ", ".join(h for h in (_report.host, seen["host"]) if h) or None
    _report.tests_using_it += seen["tests_using_it"]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _report.requested:
        return
    if _report.unavailable is not None:
        line = skip_line(_report.unavailable)
    else:
        line = (
            f"FIRESTORE EMULATOR RAN on {_report.host}: "
            f"{_report.tests_using_it} tests used the real emulator"
        )
    terminalreporter.write_sep("=", line, bold=True, yellow=_report.unavailable is not None)


if __name__ == "__main__":
    status = emulator_availability()
    print(status)
    sys.exit(0 if status.startswith("FIRESTORE EMULATOR AVAILABLE") else 1)
