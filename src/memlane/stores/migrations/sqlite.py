"""Numbered schema migrations of the SQLite store.

``MIGRATIONS[i]`` brings a database from schema version ``i`` to ``i + 1``; the applied
version is recorded in ``PRAGMA user_version``. Migrations are only ever appended,
never edited once released.
"""

from __future__ import annotations

__all__ = ["MIGRATIONS"]

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    # 1: episodes, their tags, and store metadata.
    (
        """
        CREATE TABLE episodes (
            seq             INTEGER PRIMARY KEY AUTOINCREMENT,
            id              TEXT    NOT NULL UNIQUE,
            tenant_id       TEXT    NOT NULL,
            session_id      TEXT    NOT NULL,
            event_type      TEXT    NOT NULL,
            content         TEXT    NOT NULL,
            tags            TEXT    NOT NULL DEFAULT '[]',
            importance      REAL,
            created_at_us   INTEGER NOT NULL,
            metadata        TEXT    NOT NULL DEFAULT '{}',
            embedding       BLOB,
            embedding_model TEXT
        )
        """,
        "CREATE INDEX ix_episodes_session_time ON episodes (tenant_id, session_id, created_at_us)",
        "CREATE INDEX ix_episodes_tenant_time ON episodes (tenant_id, created_at_us)",
        "CREATE INDEX ix_episodes_tenant_type_time ON episodes (tenant_id, event_type, created_at_us)",
        "CREATE INDEX ix_episodes_type_time ON episodes (event_type, created_at_us)",
        "CREATE INDEX ix_episodes_time ON episodes (created_at_us)",
        """
        CREATE TABLE episode_tags (
            tag TEXT    NOT NULL,
            seq INTEGER NOT NULL,
            PRIMARY KEY (tag, seq)
        ) WITHOUT ROWID
        """,
        "CREATE INDEX ix_episode_tags_seq ON episode_tags (seq)",
        "CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID",
        "INSERT INTO store_meta (key, value) VALUES ('delete_generation', '0')",
    ),
)
