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
    # 2: keyword index. An external-content FTS5 table over episodes.content (Porter stemming
    # over the unicode61 tokenizer, diacritics folded), kept in step by triggers on insert,
    # delete (explicit deletes and retention pruning) and update, and filled from the rows
    # that already exist.
    (
        """
        CREATE VIRTUAL TABLE episodes_fts USING fts5(
            content,
            content='episodes',
            content_rowid='seq',
            tokenize='porter unicode61 remove_diacritics 2'
        )
        """,
        """
        CREATE TRIGGER episodes_fts_insert AFTER INSERT ON episodes BEGIN
            INSERT INTO episodes_fts (rowid, content) VALUES (new.seq, new.content);
        END
        """,
        """
        CREATE TRIGGER episodes_fts_delete AFTER DELETE ON episodes BEGIN
            INSERT INTO episodes_fts (episodes_fts, rowid, content) VALUES ('delete', old.seq, old.content);
        END
        """,
        """
        CREATE TRIGGER episodes_fts_update AFTER UPDATE OF content ON episodes BEGIN
            INSERT INTO episodes_fts (episodes_fts, rowid, content) VALUES ('delete', old.seq, old.content);
            INSERT INTO episodes_fts (rowid, content) VALUES (new.seq, new.content);
        END
        """,
        "INSERT INTO episodes_fts (episodes_fts) VALUES ('rebuild')",
    ),
    # 3: session episodes (memlane.stores.sqlite_sessions): one header row per (tenant, session id),
    # the messages as JSON text by position, and one embedded window per turn.
    (
        """
        CREATE TABLE sessions (
            seq           INTEGER PRIMARY KEY AUTOINCREMENT,
            tenant_id     TEXT    NOT NULL,
            session_id    TEXT    NOT NULL,
            agent_id      TEXT    NOT NULL,
            user_id       TEXT    NOT NULL,
            started_at_us INTEGER NOT NULL,
            ended_at_us   INTEGER NOT NULL,
            message_count INTEGER NOT NULL,
            turn_count    INTEGER NOT NULL,
            metadata      TEXT    NOT NULL DEFAULT '{}',
            UNIQUE (tenant_id, session_id)
        )
        """,
        "CREATE INDEX ix_sessions_owner_time ON sessions (tenant_id, agent_id, user_id, ended_at_us)",
        "CREATE INDEX ix_sessions_ended ON sessions (ended_at_us)",
        """
        CREATE TABLE session_messages (
            session_seq INTEGER NOT NULL,
            position    INTEGER NOT NULL,
            message     TEXT    NOT NULL,
            PRIMARY KEY (session_seq, position)
        ) WITHOUT ROWID
        """,
        """
        CREATE TABLE session_windows (
            seq             INTEGER PRIMARY KEY AUTOINCREMENT,
            session_seq     INTEGER NOT NULL,
            turn            INTEGER NOT NULL,
            first_position  INTEGER NOT NULL,
            last_position   INTEGER NOT NULL,
            created_at_us   INTEGER NOT NULL,
            text            TEXT    NOT NULL,
            embedding       BLOB    NOT NULL,
            embedding_model TEXT    NOT NULL,
            UNIQUE (session_seq, turn)
        )
        """,
        "INSERT INTO store_meta (key, value) VALUES ('session_delete_generation', '0')",
    ),
)
