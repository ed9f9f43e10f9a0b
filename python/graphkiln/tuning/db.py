# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The tuning database: SQLite (Python's sqlite3), one row per tuned problem.

A row is keyed by (target, device, versions, problem): the target ("cpu", "gpu"), the
device it was measured on (CPU ISA or GPU arch), the versions of graphkiln and the kernel
libraries, and a hash of the problem (kernel, attributes, shapes, dtypes, threads; see
keys.py). Its value is the chosen solution (JSON), its measured time and when.

Robustness:
  - several processes share one file: WAL journal, a busy timeout and a retry with backoff
    on "database is locked";
  - a file that is not a tuning database of this schema version (corrupt, foreign, older)
    is renamed <name>.corrupt-<timestamp> with a warning and a fresh one is created;
  - a location that cannot be written falls back to an in-memory database (with a warning),
    seeded with the rows of the file when it can at least be read.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import threading
import time
import warnings
from dataclasses import dataclass

from .. import env

SCHEMA_VERSION = 1
APPLICATION = "graphkiln-tuning"
BUSY_TIMEOUT_MS = 30_000
RETRIES = 20

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tuning (
    target TEXT NOT NULL,
    device TEXT NOT NULL,
    versions TEXT NOT NULL,
    problem TEXT NOT NULL,
    kernel TEXT NOT NULL,
    detail TEXT NOT NULL,
    solution TEXT NOT NULL,
    ms REAL NOT NULL,
    measured_at REAL NOT NULL,
    PRIMARY KEY (target, device, versions, problem)
);
"""
_COLUMNS = (
    "target",
    "device",
    "versions",
    "problem",
    "kernel",
    "detail",
    "solution",
    "ms",
    "measured_at",
)


class TuningWarning(UserWarning):
    """The tuning database was set aside, recreated or could not be written."""


@dataclass(frozen=True)
class TuningKey:
    target: str
    device: str
    versions: str
    problem: str  # hash of `detail`
    kernel: str = ""
    detail: str = ""  # the canonical problem description (JSON), for people reading rows


@dataclass(frozen=True)
class Entry:
    solution: dict
    ms: float
    measured_at: float


def default_path() -> str:
    """GRAPHKILN_TUNING_DB, else $XDG_CACHE_HOME/graphkiln/tuning.sqlite (XDG_CACHE_HOME
    defaulting to ~/.cache)."""
    path = env.get("GRAPHKILN_TUNING_DB")
    if path:
        return os.path.expanduser(path)
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "graphkiln", "tuning.sqlite")


def _locked(exc: Exception) -> bool:
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


class TuningDB:
    """get / put / export / import over one SQLite file (or memory)."""

    def __init__(self, path: str | None = None):
        self.path = default_path() if path is None else path
        self.in_memory = self.path == ":memory:"
        self._lock = threading.Lock()
        self._conn = self._open()

    # -- opening -------------------------------------------------------------------------
    def _open(self) -> sqlite3.Connection:
        if self.in_memory:
            return self._create(
                sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
            )
        try:
            folder = os.path.dirname(os.path.abspath(self.path))
            os.makedirs(folder, exist_ok=True)
            return self._open_file()
        except (OSError, sqlite3.OperationalError) as exc:
            if _locked(exc):
                raise
            return self._memory_fallback(exc)

    def _open_file(self) -> sqlite3.Connection:
        for attempt in range(2):
            conn = None
            seen = _inode(self.path)  # set aside only the file found bad, not a newer one
            try:
                conn = self._connect(self.path)
                self._check_or_create(conn)
                return conn
            except sqlite3.DatabaseError as exc:
                if conn is not None:
                    conn.close()
                if (
                    _locked(exc)
                    or isinstance(exc, sqlite3.OperationalError)
                    and ("readonly" in str(exc) or "unable to open" in str(exc))
                ):
                    raise sqlite3.OperationalError(str(exc)) from exc
                if attempt:
                    raise
                self._set_aside(f"it is not a readable SQLite database ({exc})", seen)
            except _Foreign as exc:
                conn.close()
                if attempt:
                    raise sqlite3.DatabaseError(str(exc)) from exc
                self._set_aside(str(exc), seen)
        raise AssertionError("unreachable")

    def _connect(self, path: str, uri: bool = False) -> sqlite3.Connection:
        conn = sqlite3.connect(
            path,
            timeout=BUSY_TIMEOUT_MS / 1000,
            isolation_level=None,
            check_same_thread=False,
            uri=uri,
        )
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        return conn

    def _check_or_create(self, conn: sqlite3.Connection) -> None:
        # reading sqlite_master is what tells a corrupt / foreign file
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if tables and "meta" not in tables:
            raise _Foreign(
                f"it is not a graphkiln tuning database (tables: {', '.join(sorted(tables))})"
            )
        if tables:
            self._check_meta(conn)
        self._retry(lambda: conn.execute("PRAGMA journal_mode = WAL").fetchall())
        if not tables:
            self._retry(lambda: self._create(conn))
            self._check_meta(conn)

    @staticmethod
    def _check_meta(conn: sqlite3.Connection) -> None:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("application") != APPLICATION:
            raise _Foreign("it is not a graphkiln tuning database")
        if meta.get("schema_version") != str(SCHEMA_VERSION):
            raise _Foreign(
                f"its schema version is {meta.get('schema_version')}, this graphkiln "
                f"reads version {SCHEMA_VERSION}"
            )

    @staticmethod
    def _create(conn: sqlite3.Connection) -> sqlite3.Connection:
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute("INSERT OR IGNORE INTO meta VALUES ('application', ?)", (APPLICATION,))
            conn.execute(
                "INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return conn

    def _set_aside(self, why: str, seen) -> None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        aside = f"{self.path}.corrupt-{stamp}-{os.getpid()}"
        if _inode(self.path) != seen:
            return  # another process set it aside (and maybe recreated it) meanwhile
        try:
            os.replace(self.path, aside)
        except FileNotFoundError:
            return  # another process set it aside already
        for suffix in ("-wal", "-shm"):
            try:
                os.replace(self.path + suffix, aside + suffix)
            except OSError:
                pass
        warnings.warn(
            f"tuning database {self.path}: {why}; moved to {aside} and recreated",
            TuningWarning,
            stacklevel=4,
        )

    def _memory_fallback(self, exc: Exception) -> sqlite3.Connection:
        warnings.warn(
            f"tuning database {self.path} cannot be written ({exc}); tuning results "
            "of this process are kept in memory only",
            TuningWarning,
            stacklevel=4,
        )
        rows = []
        if os.path.exists(self.path):
            try:
                # immutable: a WAL file in a read-only folder cannot be opened otherwise
                ro = self._connect(
                    f"file:{os.path.abspath(self.path)}?mode=ro&immutable=1", uri=True
                )
                self._check_meta(ro)
                rows = ro.execute(f"SELECT {', '.join(_COLUMNS)} FROM tuning").fetchall()
                ro.close()
            except (sqlite3.Error, _Foreign):
                rows = []
        self.in_memory = True
        conn = self._create(
            sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        )
        conn.executemany(f"INSERT OR REPLACE INTO tuning VALUES ({', '.join('?' * 9)})", rows)
        return conn

    # -- access --------------------------------------------------------------------------
    def _retry(self, fn):
        delay = 0.01
        for attempt in range(RETRIES):
            try:
                return fn()
            except sqlite3.OperationalError as exc:
                if not _locked(exc) or attempt == RETRIES - 1:
                    raise
                time.sleep(delay * (1 + random.random()))
                delay = min(delay * 2, 1.0)

    def get(self, key: TuningKey) -> Entry | None:
        def read():
            return self._conn.execute(
                "SELECT solution, ms, measured_at FROM tuning WHERE target = ? AND device = ? "
                "AND versions = ? AND problem = ?",
                (key.target, key.device, key.versions, key.problem),
            ).fetchone()

        with self._lock:
            row = self._retry(read)
        return None if row is None else Entry(json.loads(row[0]), row[1], row[2])

    def put(
        self, key: TuningKey, solution: dict, ms: float, measured_at: float | None = None
    ) -> None:
        self.put_rows([self.row(key, solution, ms, measured_at)])

    @staticmethod
    def row(key: TuningKey, solution: dict, ms: float, measured_at: float | None = None) -> tuple:
        """The row put_rows takes for this key and value."""
        return (
            key.target,
            key.device,
            key.versions,
            key.problem,
            key.kernel,
            key.detail,
            json.dumps(solution, sort_keys=True),
            float(ms),
            time.time() if measured_at is None else measured_at,
        )

    def put_rows(self, rows: list[tuple]) -> None:
        """Insert or replace rows (tuples in _COLUMNS order), in one transaction."""

        def write():
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany(
                    f"INSERT OR REPLACE INTO tuning ({', '.join(_COLUMNS)}) "
                    f"VALUES ({', '.join('?' * len(_COLUMNS))})",
                    rows,
                )
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

        with self._lock:
            self._retry(write)

    def rows(self, target: str | None = None) -> list[dict]:
        query = f"SELECT {', '.join(_COLUMNS)} FROM tuning"
        args: tuple = ()
        if target is not None:
            query += " WHERE target = ?"
            args = (target,)
        with self._lock:
            found = self._retry(
                lambda: self._conn.execute(query + " ORDER BY rowid", args).fetchall()
            )
        return [dict(zip(_COLUMNS, r)) for r in found]

    def __len__(self) -> int:
        with self._lock:
            return self._retry(
                lambda: self._conn.execute("SELECT COUNT(*) FROM tuning").fetchone()[0]
            )

    def schema_version(self) -> int:
        with self._lock:
            row = self._conn.execute(
                "SELECT value FROM meta WHERE key = 'schema_version'"
            ).fetchone()
        return int(row[0])

    # -- moving between machines -----------------------------------------------------------
    def export_json(self, path: str, target: str | None = None) -> int:
        """Write every row (of `target`) to a JSON file; returns the row count."""
        rows = self.rows(target)
        for r in rows:
            r["solution"] = json.loads(r["solution"])
        with open(path, "w") as f:
            json.dump(
                {"application": APPLICATION, "schema_version": SCHEMA_VERSION, "rows": rows},
                f,
                indent=1,
                sort_keys=True,
            )
        return len(rows)

    def import_json(self, path: str) -> int:
        """Add the rows of an exported file (a row replaces the one of the same key);
        returns the row count."""
        with open(path) as f:
            data = json.load(f)
        if not isinstance(data, dict) or data.get("application") != APPLICATION:
            raise ValueError(f"{path} is not a graphkiln tuning export")
        if data.get("schema_version") != SCHEMA_VERSION:
            raise ValueError(
                f"{path} has schema version {data.get('schema_version')}, this "
                f"graphkiln reads version {SCHEMA_VERSION}"
            )
        rows = []
        for r in data["rows"]:
            r = dict(r, solution=json.dumps(r["solution"], sort_keys=True))
            rows.append(tuple(r[c] for c in _COLUMNS))
        self.put_rows(rows)
        return len(rows)

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _inode(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


class _Foreign(Exception):
    """A readable SQLite file that is not a tuning database of this schema version."""
