"""``metacortex person invite`` run as an operator runs it: the real command in a fresh
process, on a real SQLite store that a person was added to."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from metacortex.domain.records import utc_now
from metacortex.owner.invitations import KIND
from metacortex.storage.sqlite import SQLiteStore
from tests.commands import COMMAND, fresh_clone_env, run_command
from tests.owner.people_support import Household

URL = "https://memory.example.org"


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    store = SQLiteStore(data / "metacortex.sqlite3")
    household = Household.on(store)
    household.registry.change_person(household.ben.id, active=False)
    store.close()
    (tmp_path / "home").mkdir()
    return data


def _invite(data_dir: Path, *args: str) -> tuple[int, str, str]:
    done = run_command(
        [*COMMAND, "person", "invite", *args, "--data-dir", str(data_dir), "--url", URL],
        env=fresh_clone_env(data_dir.parent / "home"),
        cwd=data_dir.parent,
    )
    return done.returncode, done.stdout, done.stderr


def _stored(data_dir: Path) -> list[tuple[str, dict[str, object]]]:
    store = SQLiteStore(data_dir / "metacortex.sqlite3")
    try:
        return store.auth_list(KIND)
    finally:
        store.close()


def test_it_prints_the_link_once_and_stores_only_its_digest(data_dir: Path) -> None:
    code, out, err = _invite(data_dir, "Ann@Example.com")

    assert code == 0, err
    link = out.strip()
    assert link.startswith(URL + "/owner/invite/")
    token = link.rsplit("/", 1)[1]
    [(key, data)] = _stored(data_dir)
    assert key == hashlib.sha256(token.encode()).hexdigest()
    assert token not in repr(data)
    assert "invitation for Ann <ann@example.com> (writer; family:write, work:read)" in err
    assert "(7 days)" in err  # METACORTEX_INVITATION_DAYS' default


def test_days_and_json_say_when_it_ends(data_dir: Path) -> None:
    code, out, err = _invite(data_dir, "ann@example.com", "--days", "2", "--json")

    assert code == 0, err
    shown = json.loads(out)
    assert shown["spaces"] == {"family": "write", "work": "read"}
    assert shown["days"] == 2
    ends = datetime.fromisoformat(shown["valid_until"])
    assert abs(ends - (utc_now() + timedelta(days=2))) < timedelta(minutes=5)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("nobody@example.com",), "no person with the email 'nobody@example.com'"),
        (("ben@example.com",), "ben@example.com is deactivated; reactivate them first"),
        (("ann@example.com", "--days", "0"), "--days must be 1 to 90; got 0"),
    ],
)
def test_what_cannot_be_invited_is_refused_with_what_to_do(
    data_dir: Path, args: tuple[str, ...], message: str
) -> None:
    code, out, err = _invite(data_dir, *args)

    assert code == 2
    assert out == ""
    assert message in err
    assert _stored(data_dir) == []
