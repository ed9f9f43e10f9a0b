# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""graphkiln.tuning.db: schema, set-aside of corrupt / foreign files, read-only fallback,
export / import, concurrent writers."""

import json
import multiprocessing
import os
import sqlite3
import stat

import pytest

from graphkiln.tuning import SCHEMA_VERSION, TuningDB, TuningWarning, problem_key
from graphkiln.tuning.db import default_path


def _key(i: int, device: str = "avx2"):
    return problem_key(
        "cpu",
        device,
        {"graphkiln": "0.1.0", "onednn": "3.2.1"},
        {"kernel": "Conv", "attrs": {"group": 1}, "dims": [1, 3, i, i]},
    )


def test_schema_and_round_trip(tmp_path):
    path = str(tmp_path / "t.sqlite")
    db = TuningDB(path)
    assert db.schema_version() == SCHEMA_VERSION
    assert db.get(_key(1)) is None
    db.put(_key(1), {"attrs": {"num_threads": 1}}, 0.25)
    entry = db.get(_key(1))
    assert entry.solution == {"attrs": {"num_threads": 1}} and entry.ms == 0.25
    assert entry.measured_at > 0
    assert db.get(_key(1, device="avx512_core")) is None  # keyed by device
    db.close()
    again = TuningDB(path)
    assert again.get(_key(1)).solution == {"attrs": {"num_threads": 1}}
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_problem_key_is_canonical():
    a = problem_key("cpu", "d", {"b": "1", "a": "2"}, {"x": [1, 2], "k": {"q": 1, "p": 2.5}})
    b = problem_key("cpu", "d", {"a": "2", "b": "1"}, {"k": {"p": 2.5, "q": 1}, "x": (1, 2)})
    c = problem_key("cpu", "d", {"a": "2", "b": "1"}, {"k": {"p": 2.5, "q": 1}, "x": (1, 3)})
    assert a == b and a.problem != c.problem and len(a.problem) == 32
    assert a.versions == "a=2;b=1"


def test_default_path(monkeypatch, tmp_path):
    monkeypatch.delenv("GRAPHKILN_TUNING_DB", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_path() == str(tmp_path / "graphkiln" / "tuning.sqlite")
    monkeypatch.setenv("GRAPHKILN_TUNING_DB", str(tmp_path / "x.db"))
    assert default_path() == str(tmp_path / "x.db")


def _aside(tmp_path):
    return [p for p in os.listdir(tmp_path) if ".corrupt-" in p]


def test_corrupt_file_set_aside_and_recreated(tmp_path):
    path = tmp_path / "t.sqlite"
    db = TuningDB(str(path))
    db.put(_key(1), {"attrs": {}}, 1.0)
    db.close()
    for suffix in ("-wal", "-shm"):
        if os.path.exists(str(path) + suffix):
            os.remove(str(path) + suffix)
    data = bytearray(path.read_bytes())
    data[:100] = os.urandom(100)  # the header: no longer SQLite
    path.write_bytes(bytes(data))
    with pytest.warns(TuningWarning, match="corrupt|not a readable"):
        db = TuningDB(str(path))
    assert len(db) == 0 and db.schema_version() == SCHEMA_VERSION
    db.put(_key(2), {"attrs": {}}, 1.0)
    assert db.get(_key(2)) is not None
    assert len(_aside(tmp_path)) == 1


def test_garbage_file_set_aside(tmp_path):
    path = tmp_path / "t.sqlite"
    path.write_bytes(b"this is not a database at all" * 100)
    with pytest.warns(TuningWarning):
        db = TuningDB(str(path))
    db.put(_key(1), {"attrs": {}}, 1.0)
    assert len(db) == 1 and len(_aside(tmp_path)) == 1


def test_foreign_and_old_databases_set_aside(tmp_path):
    foreign = tmp_path / "f.sqlite"
    conn = sqlite3.connect(str(foreign))
    conn.execute("CREATE TABLE other (x)")
    conn.commit()
    conn.close()
    with pytest.warns(TuningWarning, match="not a graphkiln tuning database"):
        TuningDB(str(foreign))
    old = tmp_path / "o.sqlite"
    TuningDB(str(old)).close()
    conn = sqlite3.connect(str(old))
    conn.execute("UPDATE meta SET value = '0' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.warns(TuningWarning, match="schema version is 0"):
        db = TuningDB(str(old))
    assert db.schema_version() == SCHEMA_VERSION


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes anywhere")
def test_read_only_location_falls_back_to_memory(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    seeded = TuningDB(str(folder / "t.sqlite"))
    seeded.put(_key(1), {"attrs": {"impl_index": 1}}, 1.0)
    seeded.close()
    os.chmod(folder, stat.S_IRUSR | stat.S_IXUSR)
    os.chmod(folder / "t.sqlite", stat.S_IRUSR)
    try:
        with pytest.warns(TuningWarning, match="in memory"):
            db = TuningDB(str(folder / "t.sqlite"))
        assert db.in_memory
        assert db.get(_key(1)).solution == {"attrs": {"impl_index": 1}}  # rows still read
        db.put(_key(2), {"attrs": {}}, 1.0)
        assert db.get(_key(2)) is not None
        with pytest.warns(TuningWarning):
            fresh = TuningDB(str(folder / "sub" / "new.sqlite"))  # cannot even create it
        assert fresh.in_memory and len(fresh) == 0
    finally:
        os.chmod(folder, stat.S_IRWXU)


def test_export_import_round_trip(tmp_path):
    a = TuningDB(str(tmp_path / "a.sqlite"))
    for i in range(5):
        a.put(_key(i), {"attrs": {"num_threads": 1 + i % 2}}, 0.1 * i)
    assert a.export_json(str(tmp_path / "x.json")) == 5
    data = json.loads((tmp_path / "x.json").read_text())
    assert data["schema_version"] == SCHEMA_VERSION and len(data["rows"]) == 5
    b = TuningDB(str(tmp_path / "b.sqlite"))
    assert b.import_json(str(tmp_path / "x.json")) == 5
    assert a.rows() == b.rows()
    (tmp_path / "bad.json").write_text(json.dumps({"application": "x"}))
    with pytest.raises(ValueError):
        b.import_json(str(tmp_path / "bad.json"))


def _writer(path: str, worker: int, n: int, queue) -> None:
    try:
        db = TuningDB(path)
        for i in range(n):
            db.put(_key(worker * 1000 + i), {"attrs": {"worker": worker}}, float(i))
            db.get(_key(worker * 1000 + i // 2))
        queue.put(None)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        queue.put(repr(exc))


def test_eight_processes_concurrently(tmp_path):
    path = str(tmp_path / "shared.sqlite")
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(path, w, 40, queue)) for w in range(8)]
    for p in procs:
        p.start()
    errors = [queue.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert errors == [None] * 8
    db = TuningDB(path)
    assert len(db) == 8 * 40
    for w in range(8):
        for i in range(40):
            assert db.get(_key(w * 1000 + i)).solution == {"attrs": {"worker": w}}


def test_unwritable_location_falls_back_to_memory(tmp_path):
    """A folder that cannot be made (a file is in the way; works as root too)."""
    (tmp_path / "file").write_text("x")
    with pytest.warns(TuningWarning, match="in memory"):
        db = TuningDB(str(tmp_path / "file" / "t.sqlite"))
    assert db.in_memory
    db.put(_key(1), {"attrs": {}}, 1.0)
    assert db.get(_key(1)) is not None


def test_file_that_cannot_be_opened_for_writing_is_read_into_memory(tmp_path, monkeypatch):
    """As a read-only file looks to SQLite (simulated, so that it runs as root too)."""
    path = str(tmp_path / "t.sqlite")
    seeded = TuningDB(path)
    seeded.put(_key(1), {"attrs": {"impl_index": 1}}, 1.0)
    seeded.close()
    connect = TuningDB._connect

    def refusing(self, p, uri=False):
        if not uri:
            raise sqlite3.OperationalError("attempt to write a readonly database")
        return connect(self, p, uri)

    monkeypatch.setattr(TuningDB, "_connect", refusing)
    with pytest.warns(TuningWarning, match="in memory"):
        db = TuningDB(path)
    assert db.in_memory and db.get(_key(1)).solution == {"attrs": {"impl_index": 1}}
    db.put(_key(2), {"attrs": {}}, 2.0)
    assert len(db) == 2
