"""Numbered schema migrations of the SQLite store.

``MIGRATIONS[i]`` brings a database from schema version ``i`` to ``i + 1``; the applied
version is recorded in ``PRAGMA user_version``. Migrations are only ever appended,
never edited once released.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable

from memlane.analysis import index_terms, keyword_text, terms_column

__all__ = ["MIGRATIONS", "Step", "backfill_terms"]

Step = str | Callable[[sqlite3.Connection], None]
"""A migration step: an SQL statement, or a Python function run on the migrating connection."""


def backfill_terms(conn: sqlite3.Connection) -> None:
    """Migration 8: fill ``terms``/``token_count`` of every existing row (:mod:`memlane.analysis`)."""
    cursor = conn.execute("SELECT seq, content, metadata FROM episodes ORDER BY seq")
    while batch := cursor.fetchmany(1000):
        rows = []
        for seq, content, metadata in batch:
            try:
                meta = json.loads(metadata) if metadata else {}
            except ValueError:
                meta = {}
            terms, count = index_terms(keyword_text(content, meta if isinstance(meta, dict) else {}))
            rows.append((terms_column(terms), count, seq))
        conn.executemany("UPDATE episodes SET terms = ?, token_count = ? WHERE seq = ?", rows)


_VALUE_ROOT = """'$."langgraph"."value"'"""
"""The value index's root (migration 15; memlane.stores.base.VALUE_INDEX_ROOTS), as SQL text."""


def _value_rows(row: str, source: str = "") -> str:
    """Migration 15: the value index rows of episode ``row`` (``new`` in a trigger); ``source`` opens FROM."""
    kind = (
        "CASE t.type WHEN 'text' THEN 'string' WHEN 'integer' THEN 'number' WHEN 'real' THEN 'number' "
        "ELSE 'boolean' END"
    )
    return (
        f"SELECT t.fullkey, {kind}, t.atom, {row}.seq "
        f"FROM {source}json_tree({row}.metadata, {_VALUE_ROOT}) AS t "
        f"WHERE json_type({row}.metadata, {_VALUE_ROOT}) = 'object' "
        "AND t.type IN ('text', 'integer', 'real', 'true', 'false')"
    )


MIGRATIONS: tuple[tuple[Step, ...], ...] = (
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
    # 3: session episodes (memlane.stores.sqlite.sessions): one header row per (tenant, session id),
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
    # 4: embedding model migration (memlane.stores.sqlite.reembed): vectors of the next model,
    # staged by episode row (and by session window row) until the switch moves them into
    # ``episodes`` (``session_windows``) in one transaction. The job's target model and
    # progress cursors are ``reembed_*`` rows of ``store_meta``.
    (
        """
        CREATE TABLE reembed_staging (
            seq             INTEGER PRIMARY KEY,
            embedding       BLOB    NOT NULL,
            embedding_model TEXT    NOT NULL
        )
        """,
        """
        CREATE TABLE reembed_window_staging (
            seq             INTEGER PRIMARY KEY,
            embedding       BLOB    NOT NULL,
            embedding_model TEXT    NOT NULL
        )
        """,
    ),
    # 5: bi-temporal episodes (Snodgrass): valid time (valid_from, valid_until) and transaction
    # time (recorded_at, invalidated_at), plus the supersede link old -> new and its reason.
    # Existing rows get valid_from = recorded_at = created_at (still true, known since created).
    # Updating these columns bumps ``delete_generation`` so every process rebuilds its vector index.
    (
        "ALTER TABLE episodes ADD COLUMN valid_from_us INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE episodes ADD COLUMN valid_until_us INTEGER",
        "ALTER TABLE episodes ADD COLUMN recorded_at_us INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE episodes ADD COLUMN invalidated_at_us INTEGER",
        "ALTER TABLE episodes ADD COLUMN superseded_by TEXT",
        "ALTER TABLE episodes ADD COLUMN supersede_reason TEXT",
        "UPDATE episodes SET valid_from_us = created_at_us, recorded_at_us = created_at_us",
        "CREATE INDEX ix_episodes_superseded_by ON episodes (superseded_by) WHERE superseded_by IS NOT NULL",
    ),
    # 6: forgetting (memlane.lifecycle.forgetting): ``archived_at_us`` (null = active; archived episodes are
    # hidden from recall by default, never deleted by archiving) and ``session_scoped`` (1 = removed
    # when its session ends). Existing rows: active, not session-scoped.
    (
        "ALTER TABLE episodes ADD COLUMN archived_at_us INTEGER",
        "ALTER TABLE episodes ADD COLUMN session_scoped INTEGER NOT NULL DEFAULT 0",
        "CREATE INDEX ix_episodes_session_scoped ON episodes (tenant_id, session_id) "
        "WHERE session_scoped = 1",
    ),
    # 7: retrieval bookkeeping (EpisodicMemory.recall_episodes): how many ranked recalls returned
    # the episode and when the last one did (null = never). Updated in one batched UPDATE per
    # recall that does NOT bump ``delete_generation`` (the vector index holds neither column).
    (
        "ALTER TABLE episodes ADD COLUMN retrieve_count INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE episodes ADD COLUMN last_retrieved_at_us INTEGER",
    ),
    # 8: one text analysis for every backend (memlane.analysis): the analysed keyword text of each
    # episode (content + metadata["caption"]) as space-joined ``terms`` and its BM25 length
    # ``token_count``, computed by memlane at write time (existing rows backfilled here); the FTS5
    # index now covers ``terms`` with the ``ascii`` tokenizer, which only splits at the spaces
    # (terms hold letters, digits and marks only), so it matches exactly what PostgreSQL matches.
    (
        "DROP TRIGGER IF EXISTS episodes_fts_insert",
        "DROP TRIGGER IF EXISTS episodes_fts_delete",
        "DROP TRIGGER IF EXISTS episodes_fts_update",
        "DROP TABLE IF EXISTS episodes_fts",
        "ALTER TABLE episodes ADD COLUMN terms TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE episodes ADD COLUMN token_count INTEGER NOT NULL DEFAULT 0",
        backfill_terms,
        """
        CREATE VIRTUAL TABLE episodes_fts USING fts5(
            terms,
            content='episodes',
            content_rowid='seq',
            tokenize='ascii'
        )
        """,
        """
        CREATE TRIGGER episodes_fts_insert AFTER INSERT ON episodes BEGIN
            INSERT INTO episodes_fts (rowid, terms) VALUES (new.seq, new.terms);
        END
        """,
        """
        CREATE TRIGGER episodes_fts_delete AFTER DELETE ON episodes BEGIN
            INSERT INTO episodes_fts (episodes_fts, rowid, terms) VALUES ('delete', old.seq, old.terms);
        END
        """,
        """
        CREATE TRIGGER episodes_fts_update AFTER UPDATE OF terms ON episodes BEGIN
            INSERT INTO episodes_fts (episodes_fts, rowid, terms) VALUES ('delete', old.seq, old.terms);
            INSERT INTO episodes_fts (rowid, terms) VALUES (new.seq, new.terms);
        END
        """,
        "INSERT INTO episodes_fts (episodes_fts) VALUES ('rebuild')",
        "CREATE INDEX ix_episodes_session_seq ON episodes (tenant_id, session_id, seq)",
    ),
    # 9: set-based keyword index maintenance on insert. The per-row insert trigger is dropped:
    # ``SQLiteStore`` fills ``episodes_fts`` (and ``episode_tags``) with one ``INSERT ... SELECT``
    # over the batch's new rows, in the transaction that inserts them. The delete and update
    # triggers stay, so deletes, retention pruning and session-scoped removal still remove FTS
    # rows in their own transaction.
    ("DROP TRIGGER IF EXISTS episodes_fts_insert",),
    # 10: the FTS5 vocabulary (term -> documents, table-wide) as a virtual table: lets a keyword search
    # drop a query term found in over half of a scope without scanning its matches when the scope is
    # the whole table (memlane.stores.sqlite.fts).
    ("CREATE VIRTUAL TABLE episodes_fts_terms USING fts5vocab(episodes_fts, 'row')",),
    # 11: keyword statistics per scope, kept as the rows change (memlane.stores.sqlite.fts): the
    # stored rows, their total token count and their first/last row key of every (tenant, session).
    # Inserts add to it set-based in their transaction (SQLiteStore); deletes subtract per row.
    (
        """
        CREATE TABLE scope_stats (
            tenant_id TEXT NOT NULL,
            session_id TEXT NOT NULL,
            rows INTEGER NOT NULL,
            tokens INTEGER NOT NULL,
            min_seq INTEGER NOT NULL,
            max_seq INTEGER NOT NULL,
            PRIMARY KEY (tenant_id, session_id)
        ) WITHOUT ROWID
        """,
        "INSERT INTO scope_stats "
        "SELECT tenant_id, session_id, count(*), sum(token_count), min(seq), max(seq) "
        "FROM episodes GROUP BY tenant_id, session_id",
        """
        CREATE TRIGGER scope_stats_delete AFTER DELETE ON episodes BEGIN
            UPDATE scope_stats SET rows = rows - 1, tokens = tokens - old.token_count
            WHERE tenant_id = old.tenant_id AND session_id = old.session_id;
        END
        """,
        """
        CREATE TRIGGER scope_stats_tokens AFTER UPDATE OF token_count ON episodes BEGIN
            UPDATE scope_stats SET tokens = tokens - old.token_count + new.token_count
            WHERE tenant_id = new.tenant_id AND session_id = new.session_id;
        END
        """,
    ),
    # 12: the knowledge graph (memlane.stores.sqlite.graph, memlane.graph): entities and their aliases,
    # bi-temporal facts (valid time valid_from/valid_until, transaction time recorded_at/invalidated_at,
    # as Unix microseconds like the episodes' *_us columns), recorded merges, and episode -> entity
    # links. Every key leads with tenant_id, as in PostgreSQL (fact ids are unique per tenant, as there).
    (
        """
        CREATE TABLE graph_entities (
            tenant_id   TEXT    NOT NULL,
            id          TEXT    NOT NULL,
            name        TEXT    NOT NULL,
            entity_type TEXT    NOT NULL,
            created_at  INTEGER NOT NULL,
            merged_into TEXT,
            PRIMARY KEY (tenant_id, id)
        ) WITHOUT ROWID
        """,
        "CREATE INDEX ix_graph_entities_merged ON graph_entities (tenant_id, merged_into) "
        "WHERE merged_into IS NOT NULL",
        """
        CREATE TABLE graph_aliases (
            tenant_id  TEXT    NOT NULL,
            alias      TEXT    NOT NULL,
            entity_id  TEXT    NOT NULL,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (tenant_id, alias)
        ) WITHOUT ROWID
        """,
        "CREATE INDEX ix_graph_aliases_entity ON graph_aliases (tenant_id, entity_id)",
        """
        CREATE TABLE graph_facts (
            seq               INTEGER PRIMARY KEY AUTOINCREMENT,
            id                TEXT    NOT NULL,
            tenant_id         TEXT    NOT NULL,
            session_id        TEXT    NOT NULL,
            subject           TEXT    NOT NULL,
            predicate         TEXT    NOT NULL,
            object            TEXT,
            value             TEXT,
            valid_from        INTEGER NOT NULL,
            valid_until       INTEGER,
            recorded_at       INTEGER NOT NULL,
            invalidated_at    INTEGER,
            superseded_by     TEXT,
            supersede_reason  TEXT,
            confidence        REAL    NOT NULL,
            importance        REAL,
            source_episode_id TEXT,
            source_session_id TEXT,
            method            TEXT    NOT NULL,
            raw_predicate     TEXT    NOT NULL
        )
        """,
        "CREATE INDEX ix_graph_facts_subject ON graph_facts (tenant_id, subject, predicate, valid_from)",
        "CREATE INDEX ix_graph_facts_object ON graph_facts (tenant_id, object) WHERE object IS NOT NULL",
        "CREATE UNIQUE INDEX ix_graph_facts_tenant_id ON graph_facts (tenant_id, id)",
        "CREATE INDEX ix_graph_facts_source ON graph_facts (tenant_id, source_episode_id)",
        "CREATE INDEX ix_graph_facts_source_session ON graph_facts (tenant_id, source_session_id)",
        """
        CREATE TABLE graph_merges (
            seq       INTEGER PRIMARY KEY AUTOINCREMENT,
            tenant_id TEXT    NOT NULL,
            kind      TEXT    NOT NULL,
            source    TEXT    NOT NULL,
            into_id   TEXT    NOT NULL,
            merged_at INTEGER NOT NULL,
            reason    TEXT    NOT NULL
        )
        """,
        "CREATE INDEX ix_graph_merges_tenant ON graph_merges (tenant_id, kind)",
        """
        CREATE TABLE graph_episode_entities (
            tenant_id  TEXT    NOT NULL,
            entity_id  TEXT    NOT NULL,
            episode_id TEXT    NOT NULL,
            session_id TEXT    NOT NULL,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (tenant_id, entity_id, episode_id)
        ) WITHOUT ROWID
        """,
        "CREATE INDEX ix_graph_episode_entities_episode ON graph_episode_entities (tenant_id, episode_id)",
    ),
    # 13: the facet index (memlane.stores.base.FACET_PATHS, memlane.stores.sqlite.facets): the JSON text at
    # metadata path langgraph.namespace of the active rows (neither retired nor archived) by event type
    # and tenant, a partial index on the expression, so listing LangGraph namespaces walks one index
    # entry per distinct value. SQLite maintains it on every write; rows without the path are left out.
    (
        "CREATE INDEX ix_episodes_facet_0 ON episodes "
        """(event_type, tenant_id, (metadata -> '$."langgraph"."namespace"')) """
        "WHERE invalidated_at_us IS NULL AND archived_at_us IS NULL "
        """AND (metadata -> '$."langgraph"."namespace"') IS NOT NULL""",
    ),
    # 14: a leaner keyword index to write. memlane scores BM25 itself from ``episodes.terms`` and
    # ``token_count`` (memlane.bm25); FTS5 only answers which rows hold a query term (each term one
    # token of the ``ascii`` tokenizer, OR-ed: memlane.stores.sqlite.fts) and, through fts5vocab, in
    # how many rows a term is. ``detail=none`` keeps exactly that (no positions or per-column counts)
    # and ``columnsize=0`` drops the per-row length table that only FTS5's own ``bm25()`` read: the
    # same matches and document counts at about 0.6x the insert cost. Rebuilt from ``terms``; the
    # delete/update triggers and the vocabulary table name the index, so they carry over.
    (
        "DROP TABLE IF EXISTS episodes_fts_terms",
        "DROP TABLE IF EXISTS episodes_fts",
        """
        CREATE VIRTUAL TABLE episodes_fts USING fts5(
            terms,
            content='episodes',
            content_rowid='seq',
            tokenize='ascii',
            detail=none,
            columnsize=0
        )
        """,
        "INSERT INTO episodes_fts (episodes_fts) VALUES ('rebuild')",
        "CREATE VIRTUAL TABLE episodes_fts_terms USING fts5vocab(episodes_fts, 'row')",
    ),
    # 15: the value index (memlane.stores.base.VALUE_INDEX_ROOTS, memlane.stores.sqlite.value_index): every
    # string, number and boolean leaf under metadata path langgraph.value, one row (path, kind, value, seq),
    # the path as SQLite's json_tree spells it (``fullkey``), kind as MetadataCondition.kind names it. Kept
    # by triggers (a row without the object inserts nothing); the existing rows are backfilled. Every
    # step can run again over its own result (IF NOT EXISTS, OR IGNORE).
    (
        """
        CREATE TABLE IF NOT EXISTS episode_metadata_values (
            path  TEXT    NOT NULL,
            kind  TEXT    NOT NULL,
            value         NOT NULL,
            seq   INTEGER NOT NULL,
            PRIMARY KEY (path, kind, value, seq)
        ) WITHOUT ROWID
        """,
        "CREATE INDEX IF NOT EXISTS ix_episode_metadata_values_seq ON episode_metadata_values (seq)",
        "CREATE TRIGGER IF NOT EXISTS tr_episode_metadata_values_insert AFTER INSERT ON episodes "
        f"WHEN json_type(new.metadata, {_VALUE_ROOT}) = 'object' BEGIN "
        f"INSERT INTO episode_metadata_values (path, kind, value, seq) {_value_rows('new')}; END",
        "CREATE TRIGGER IF NOT EXISTS tr_episode_metadata_values_update AFTER UPDATE OF metadata ON episodes "
        f"WHEN (old.metadata -> {_VALUE_ROOT}) IS NOT (new.metadata -> {_VALUE_ROOT}) BEGIN "
        "DELETE FROM episode_metadata_values WHERE seq = old.seq; "
        f"INSERT INTO episode_metadata_values (path, kind, value, seq) {_value_rows('new')}; END",
        "CREATE TRIGGER IF NOT EXISTS tr_episode_metadata_values_delete AFTER DELETE ON episodes BEGIN "
        "DELETE FROM episode_metadata_values WHERE seq = old.seq; END",
        f"INSERT OR IGNORE INTO episode_metadata_values (path, kind, value, seq) "
        f"{_value_rows('e', 'episodes AS e, ')}",
    ),
)
