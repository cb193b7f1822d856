"""The stores the store tests run against: the SQLite file, and PostgreSQL
where one is reachable (`ORIFLAMME_TEST_POSTGRESQL`, a libpq URL whose
role may create databases; `.ci/postgresql start` starts one). Each test
gets a database of its own, dropped after it."""

from __future__ import annotations

import contextlib
import os
import secrets
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from oriflamme.server.core.facts import FACT_TABLES, FactsRows, Row
from oriflamme.server.store import Store

POSTGRESQL = os.environ.get("ORIFLAMME_TEST_POSTGRESQL")
NO_POSTGRESQL = (
    "no PostgreSQL to test against: set ORIFLAMME_TEST_POSTGRESQL to a URL whose role may"
    ' create databases (`eval "$(.ci/postgresql start)"` starts one; .ci/run does)'
)


class Place:
    """Where one test's store lives: `open` opens it (again), `database`
    is what `serve --database` takes (None: the data directory's file)."""

    def __init__(self, kind: str, path: Path, database: str | None) -> None:
        self.kind = kind
        self.path = path
        self.database = database

    def open(self) -> Store:
        if self.database is None:
            from oriflamme.server.store import SqliteStore

            return SqliteStore(self.path)
        from oriflamme.server.pg_store import PostgresStore

        return PostgresStore(self.database)

    def execute(self, sql: str, *args: object) -> None:
        """Run `sql` on the database beside the store (a host's hand)."""
        if self.database is None:
            with closing(sqlite3.connect(self.path)) as db, db:
                db.execute(sql.replace("%s", "?"), args)
        else:
            import psycopg

            with psycopg.connect(self.database, autocommit=True) as server:
                server.execute(sql, args)


def _with_database(url: str, name: str) -> str:
    return urlsplit(url)._replace(path=f"/{name}").geturl()


@contextlib.contextmanager
def _made(kind: str, tmp_path: Path) -> Iterator[Place]:
    if kind == "sqlite":
        yield Place("sqlite", tmp_path / "server.sqlite3", None)
        return
    if POSTGRESQL is None:
        pytest.skip(NO_POSTGRESQL)
    import psycopg

    name = f"oriflamme_test_{secrets.token_hex(6)}"
    with psycopg.connect(POSTGRESQL, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield Place("postgresql", tmp_path / "server.sqlite3", _with_database(POSTGRESQL, name))
    finally:
        with psycopg.connect(POSTGRESQL, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(params=["sqlite", "postgresql"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Place]:
    """Each store in turn."""
    with _made(request.param, tmp_path) as made:
        yield made


@pytest.fixture
def postgresql(tmp_path: Path) -> Iterator[Place]:
    """A PostgreSQL database of its own."""
    with _made("postgresql", tmp_path) as made:
        yield made


def rows(lobby: bytes, **tables: dict[int, Row]) -> FactsRows:
    """Facts as a store keeps them, for the store tests (a store never reads
    what is in them): the lobby's row, and the rows of the tables given."""
    return FactsRows(lobby, {table: dict(tables.get(table, {})) for table in FACT_TABLES})
