"""Numbered schema migrations of the PostgreSQL store.

``MIGRATIONS[i]`` brings a schema from version ``i`` to ``i + 1``; every applied number is
recorded as a row of ``memlane_schema_migrations`` (the schema version is the highest one).
Migrations are only ever appended, never edited once released. The store applies them at
open, in one transaction under a database-wide advisory lock
(:data:`MIGRATION_LOCK_KEY`), so processes opening the same database at once neither race
nor see a half-built schema.

Statements are :class:`psycopg.sql.SQL` templates, never string-formatted: ``{schema}`` is
the store's schema and ``{ext}`` the schema the ``vector`` extension lives in, both filled
in with :class:`psycopg.sql.Identifier` so the store never depends on ``search_path``
(literal braces are doubled: ``'{{}}'`` is an empty array).

The embedding column is created *untyped* (``vector``, any dimension) because the
dimension is only known when an embedding model is bound. :func:`bind_vector_statements`
is the dimension-keyed step the store runs once, at the first
:meth:`~memlane.stores.postgres.PostgresStore.bind_embedding_model`: it fixes the column
to ``vector(dims)``; then :func:`memlane.stores.postgres.vector_index.fold` builds the
partial HNSW index (``vector_cosine_ops``). The bound model and dimension are then recorded
in ``memlane_meta``.

:func:`migrate` applies what is missing; :func:`is_current` and :func:`read_version` read
the applied version.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import sql

from memlane.analysis import index_terms, keyword_text, terms_column
from memlane.errors import SchemaVersionError, StoreError
from memlane.stores.postgres.vector_index import HNSW_MAX_DIMS, WATERMARK_KEY, has_index

__all__ = [
    "BIND_LOCK_KEY",
    "BOOTSTRAP",
    "DELETIONS_KEPT",
    "HNSW_MAX_DIMS",
    "MIGRATIONS",
    "MIGRATIONS_TABLE",
    "MIGRATION_LOCK_KEY",
    "PRUNE_LOCK_KEY",
    "apply_migration",
    "bind_vector_statements",
    "ext_schema",
    "is_current",
    "migrate",
    "read_version",
]

logger = logging.getLogger(__name__)


def _lock_key(name: str) -> int:
    """A stable signed 64-bit advisory-lock key derived from ``name``."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "big", signed=True)


MIGRATION_LOCK_KEY = _lock_key("memlane.postgres.migrate")
"""``pg_advisory_xact_lock`` key held while migrating (database-wide: also guards
``CREATE SCHEMA`` and ``CREATE EXTENSION``, which race across schemas)."""

BIND_LOCK_KEY = _lock_key("memlane.postgres.bind_embedding_model")
"""``pg_advisory_xact_lock`` key held while the first embedding model is bound."""

PRUNE_LOCK_KEY = _lock_key("memlane.postgres.prune_deletions")
"""``pg_try_advisory_xact_lock`` key of the deleting transaction that prunes ``memlane_deletions``
(one at a time; a deleter that does not get it skips pruning, so deleters never wait on each other)."""

DELETIONS_KEPT = "10 minutes"
"""How long ``memlane_deletions`` keeps a logged deletion before a deleting transaction prunes it."""

MIGRATIONS_TABLE = "memlane_schema_migrations"

BOOTSTRAP = sql.SQL(
    "CREATE TABLE IF NOT EXISTS {schema}.memlane_schema_migrations ("
    " version integer PRIMARY KEY,"
    " applied_at timestamptz NOT NULL DEFAULT now())"
)
"""Created before the first migration; holds one row per applied migration number."""

Step = sql.SQL | Callable[[psycopg.Connection[Any], sql.Identifier], None]
"""A migration step: an SQL template, or a Python function run on the migrating connection."""


def backfill_terms(conn: psycopg.Connection[Any], schema: sql.Identifier) -> None:
    """Migration 8: fill ``terms``/``token_count`` of every existing row (:mod:`memlane.analysis`)."""
    table = sql.SQL("{schema}.memlane_episodes").format(schema=schema)
    rows = conn.execute(
        sql.SQL("SELECT seq, content, metadata FROM {t} ORDER BY seq").format(t=table)
    ).fetchall()
    updates = []
    for seq, content, metadata in rows:
        terms, count = index_terms(keyword_text(content, metadata if isinstance(metadata, dict) else {}))
        updates.append((terms_column(terms), count, seq))
    if updates:
        with conn.cursor() as cur:
            cur.executemany(
                sql.SQL("UPDATE {t} SET terms = %s, token_count = %s WHERE seq = %s").format(t=table), updates
            )


def record_watermark(conn: psycopg.Connection[Any], schema: sql.Identifier) -> None:
    """Migration 16: watermark 0 when the schema has no HNSW index, nothing when it has the full one."""
    with conn.cursor() as cur:
        if has_index(cur, schema):
            return
        cur.execute(
            sql.SQL("INSERT INTO {schema}.memlane_meta (key, value) VALUES (%s, '0')").format(schema=schema),
            (WATERMARK_KEY,),
        )


_TENANT_CHILDREN = (
    # (table, parent table, column holding the parent's seq, drop rows whose parent is gone)
    ("memlane_session_messages", "memlane_sessions", "session_seq", False),  # a foreign key: none
    ("memlane_session_windows", "memlane_sessions", "session_seq", False),
    ("memlane_reembed_staging", "memlane_episodes", "seq", True),  # no foreign key: stale rows
    ("memlane_reembed_window_staging", "memlane_session_windows", "seq", True),
)


def add_tenant_columns(conn: psycopg.Connection[Any], schema: sql.Identifier) -> None:
    """Migration 9: give each table of :data:`_TENANT_CHILDREN` a ``tenant_id`` copied from its parent.

    Staged vectors of rows deleted since they were staged have no parent and are dropped (the
    switch would skip them anyway); then the column becomes ``NOT NULL``.
    """
    for table, parent, key, drop_orphans in _TENANT_CHILDREN:
        names = {"t": sql.Identifier(table), "p": sql.Identifier(parent), "k": sql.Identifier(key)}
        conn.execute(sql.SQL("ALTER TABLE {s}.{t} ADD COLUMN tenant_id text").format(s=schema, **names))
        conn.execute(
            sql.SQL(
                "UPDATE {s}.{t} AS c SET tenant_id = p.tenant_id FROM {s}.{p} AS p WHERE p.seq = c.{k}"
            ).format(s=schema, **names)
        )
        if drop_orphans:
            conn.execute(sql.SQL("DELETE FROM {s}.{t} WHERE tenant_id IS NULL").format(s=schema, **names))
        conn.execute(
            sql.SQL("ALTER TABLE {s}.{t} ALTER COLUMN tenant_id SET NOT NULL").format(s=schema, **names)
        )


MIGRATIONS: tuple[tuple[Step, ...], ...] = (
    # 1: episodes (tags inline as text[]), their indexes, and store metadata.
    (
        sql.SQL(
            """
            CREATE TABLE {schema}.memlane_episodes (
                seq             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                id              text             NOT NULL,
                tenant_id       text             NOT NULL,
                session_id      text             NOT NULL,
                event_type      text             NOT NULL,
                content         text             NOT NULL,
                tags            text[]           NOT NULL DEFAULT '{{}}',
                importance      double precision,
                created_at      timestamptz      NOT NULL,
                metadata        json             NOT NULL DEFAULT '{{}}',
                embedding       {ext}.vector,
                embedding_model text,
                CONSTRAINT memlane_episodes_id_key UNIQUE (id)
            )
            """
        ),
        sql.SQL(
            "CREATE INDEX ix_memlane_episodes_session_time "
            "ON {schema}.memlane_episodes (tenant_id, session_id, created_at, seq)"
        ),
        sql.SQL(
            "CREATE INDEX ix_memlane_episodes_tenant_time "
            "ON {schema}.memlane_episodes (tenant_id, created_at, seq)"
        ),
        sql.SQL(
            "CREATE INDEX ix_memlane_episodes_tenant_type_time "
            "ON {schema}.memlane_episodes (tenant_id, event_type, created_at, seq)"
        ),
        sql.SQL(
            "CREATE INDEX ix_memlane_episodes_type_time "
            "ON {schema}.memlane_episodes (event_type, created_at, seq)"
        ),
        sql.SQL("CREATE INDEX ix_memlane_episodes_time ON {schema}.memlane_episodes (created_at, seq)"),
        sql.SQL("CREATE INDEX ix_memlane_episodes_tags ON {schema}.memlane_episodes USING gin (tags)"),
        sql.SQL("CREATE TABLE {schema}.memlane_meta (key text PRIMARY KEY, value text NOT NULL)"),
    ),
    # 2: keyword index. A stored generated tsvector of the content (the built-in ``english``
    # configuration: Snowball stemming, English stop words), so it is kept in step with every
    # insert, delete and retention prune by PostgreSQL itself, and a GIN index over it.
    (
        sql.SQL(
            "ALTER TABLE {schema}.memlane_episodes ADD COLUMN content_tsv pg_catalog.tsvector "
            "GENERATED ALWAYS AS "
            "(pg_catalog.to_tsvector('pg_catalog.english'::pg_catalog.regconfig, content)) STORED"
        ),
        sql.SQL(
            "CREATE INDEX ix_memlane_episodes_content_tsv "
            "ON {schema}.memlane_episodes USING gin (content_tsv)"
        ),
    ),
    # 3: session episodes (memlane.stores.postgres.sessions): one header row per (tenant, session
    # id), the messages as JSON text by position, and one embedded window per turn. The window
    # vectors stay untyped (any dimension; the store checks it) and are always searched exactly,
    # filtered by owner first, so they need no HNSW index.
    (
        sql.SQL(
            """
            CREATE TABLE {schema}.memlane_sessions (
                seq           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                tenant_id     text        NOT NULL,
                session_id    text        NOT NULL,
                agent_id      text        NOT NULL,
                user_id       text        NOT NULL,
                started_at    timestamptz NOT NULL,
                ended_at      timestamptz NOT NULL,
                message_count integer     NOT NULL,
                turn_count    integer     NOT NULL,
                metadata      json        NOT NULL DEFAULT '{{}}',
                CONSTRAINT memlane_sessions_tenant_session_key UNIQUE (tenant_id, session_id)
            )
            """
        ),
        sql.SQL(
            "CREATE INDEX ix_memlane_sessions_owner_time "
            "ON {schema}.memlane_sessions (tenant_id, agent_id, user_id, ended_at, seq)"
        ),
        sql.SQL("CREATE INDEX ix_memlane_sessions_ended ON {schema}.memlane_sessions (ended_at)"),
        sql.SQL(
            """
            CREATE TABLE {schema}.memlane_session_messages (
                session_seq bigint  NOT NULL REFERENCES {schema}.memlane_sessions (seq) ON DELETE CASCADE,
                position    integer NOT NULL,
                message     text    NOT NULL,
                PRIMARY KEY (session_seq, position)
            )
            """
        ),
        sql.SQL(
            """
            CREATE TABLE {schema}.memlane_session_windows (
                seq             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                session_seq     bigint      NOT NULL
                                REFERENCES {schema}.memlane_sessions (seq) ON DELETE CASCADE,
                turn            integer     NOT NULL,
                first_position  integer     NOT NULL,
                last_position   integer     NOT NULL,
                created_at      timestamptz NOT NULL,
                text            text        NOT NULL,
                embedding       {ext}.vector NOT NULL,
                embedding_model text        NOT NULL,
                CONSTRAINT memlane_session_windows_turn_key UNIQUE (session_seq, turn)
            )
            """
        ),
    ),
    # 4: embedding model migration (memlane.stores.postgres.reembed): vectors of the next model,
    # staged by episode row (and by session window row) until the switch moves them into
    # memlane_episodes (memlane_session_windows) in one transaction. Untyped (any dimension): the
    # target dimension is only known when a job starts. The job's target model and progress
    # cursors are ``reembed_*`` rows of memlane_meta.
    (
        sql.SQL(
            """
            CREATE TABLE {schema}.memlane_reembed_staging (
                seq             bigint       PRIMARY KEY,
                embedding       {ext}.vector NOT NULL,
                embedding_model text         NOT NULL
            )
            """
        ),
        sql.SQL(
            """
            CREATE TABLE {schema}.memlane_reembed_window_staging (
                seq             bigint       PRIMARY KEY,
                embedding       {ext}.vector NOT NULL,
                embedding_model text         NOT NULL
            )
            """
        ),
    ),
    # 5: bi-temporal episodes (Snodgrass): valid time (valid_from, valid_until) and transaction
    # time (recorded_at, invalidated_at), plus the supersede link old -> new and its reason.
    # Existing rows get valid_from = recorded_at = created_at (still true, known since created).
    (
        sql.SQL(
            "ALTER TABLE {schema}.memlane_episodes "
            "ADD COLUMN valid_from timestamptz, ADD COLUMN valid_until timestamptz, "
            "ADD COLUMN recorded_at timestamptz, ADD COLUMN invalidated_at timestamptz, "
            "ADD COLUMN superseded_by text, ADD COLUMN supersede_reason text"
        ),
        sql.SQL("UPDATE {schema}.memlane_episodes SET valid_from = created_at, recorded_at = created_at"),
        sql.SQL(
            "ALTER TABLE {schema}.memlane_episodes "
            "ALTER COLUMN valid_from SET NOT NULL, ALTER COLUMN recorded_at SET NOT NULL"
        ),
        sql.SQL(
            "CREATE INDEX ix_memlane_episodes_superseded_by ON {schema}.memlane_episodes (superseded_by) "
            "WHERE superseded_by IS NOT NULL"
        ),
    ),
    # 6: forgetting (memlane.lifecycle.forgetting): ``archived_at`` (null = active; archived episodes are
    # hidden from recall by default, never deleted by archiving) and ``session_scoped`` (removed
    # when its session ends). Existing rows: active, not session-scoped.
    (
        sql.SQL(
            "ALTER TABLE {schema}.memlane_episodes ADD COLUMN archived_at timestamptz, "
            "ADD COLUMN session_scoped boolean NOT NULL DEFAULT false"
        ),
        sql.SQL(
            "CREATE INDEX ix_memlane_episodes_session_scoped ON {schema}.memlane_episodes "
            "(tenant_id, session_id) WHERE session_scoped"
        ),
    ),
    # 7: retrieval bookkeeping (EpisodicMemory.recall_episodes): how many ranked recalls returned
    # the episode and when the last one did (null = never); one batched UPDATE per recall.
    (
        sql.SQL(
            "ALTER TABLE {schema}.memlane_episodes "
            "ADD COLUMN retrieve_count bigint NOT NULL DEFAULT 0, ADD COLUMN last_retrieved_at timestamptz"
        ),
    ),
    # 8: one text analysis for every backend (memlane.analysis): the analysed keyword text of each
    # episode (content + metadata["caption"]) as space-joined ``terms`` and its BM25 length
    # ``token_count``, computed by memlane at write time (existing rows backfilled here), searched
    # as ``string_to_array(terms, ' ')`` under a GIN index, which matches exactly what SQLite's FTS5
    # ``ascii`` index of the same column matches. The ``english`` tsvector of migration 2 is dropped.
    (
        sql.SQL(
            "ALTER TABLE {schema}.memlane_episodes ADD COLUMN terms text NOT NULL DEFAULT '', "
            "ADD COLUMN token_count integer NOT NULL DEFAULT 0"
        ),
        backfill_terms,
        sql.SQL("ALTER TABLE {schema}.memlane_episodes DROP COLUMN IF EXISTS content_tsv"),
        sql.SQL(
            "CREATE INDEX ix_memlane_episodes_terms ON {schema}.memlane_episodes "
            "USING gin (pg_catalog.string_to_array(terms, ' '))"
        ),
        sql.SQL(
            "CREATE INDEX ix_memlane_episodes_session_seq ON {schema}.memlane_episodes "
            "(tenant_id, session_id, seq)"
        ),
    ),
    # 9: ready for a tenant-sharded cluster (Citus distributes a table by one column and requires
    # every primary key, unique constraint and foreign key between distributed tables to include
    # it): ``tenant_id`` leads every key. Session messages, session windows and both re-embedding
    # staging tables get a ``tenant_id`` column, filled from their parent rows (staged vectors of
    # rows deleted since are dropped: nothing could use them). Episode ids stay unique across
    # tenants on one server: the store checks ``id`` before inserting (see PostgresStore); the
    # constraint itself is per tenant. Lookups by ``seq`` or ``id`` alone keep plain b-tree indexes.
    (
        add_tenant_columns,
        sql.SQL(
            "ALTER TABLE {schema}.memlane_session_messages "
            "DROP CONSTRAINT memlane_session_messages_session_seq_fkey, "
            "DROP CONSTRAINT memlane_session_messages_pkey"
        ),
        sql.SQL(
            "ALTER TABLE {schema}.memlane_session_windows "
            "DROP CONSTRAINT memlane_session_windows_session_seq_fkey, "
            "DROP CONSTRAINT memlane_session_windows_pkey, "
            "DROP CONSTRAINT memlane_session_windows_turn_key"
        ),
        sql.SQL(
            "ALTER TABLE {schema}.memlane_episodes DROP CONSTRAINT memlane_episodes_pkey, "
            "DROP CONSTRAINT memlane_episodes_id_key, "
            "ADD CONSTRAINT memlane_episodes_pkey PRIMARY KEY (tenant_id, seq), "
            "ADD CONSTRAINT memlane_episodes_tenant_id_key UNIQUE (tenant_id, id)"
        ),
        sql.SQL("CREATE INDEX ix_memlane_episodes_seq ON {schema}.memlane_episodes (seq)"),
        sql.SQL("CREATE INDEX ix_memlane_episodes_id ON {schema}.memlane_episodes (id)"),
        sql.SQL(
            "ALTER TABLE {schema}.memlane_sessions DROP CONSTRAINT memlane_sessions_pkey, "
            "ADD CONSTRAINT memlane_sessions_pkey PRIMARY KEY (tenant_id, seq)"
        ),
        sql.SQL("CREATE INDEX ix_memlane_sessions_seq ON {schema}.memlane_sessions (seq)"),
        sql.SQL(
            "ALTER TABLE {schema}.memlane_session_messages "
            "ADD CONSTRAINT memlane_session_messages_pkey PRIMARY KEY (tenant_id, session_seq, position), "
            "ADD CONSTRAINT memlane_session_messages_session_fkey FOREIGN KEY (tenant_id, session_seq) "
            "REFERENCES {schema}.memlane_sessions (tenant_id, seq) ON DELETE CASCADE"
        ),
        sql.SQL(
            "CREATE INDEX ix_memlane_session_messages_session "
            "ON {schema}.memlane_session_messages (session_seq, position)"
        ),
        sql.SQL(
            "ALTER TABLE {schema}.memlane_session_windows "
            "ADD CONSTRAINT memlane_session_windows_pkey PRIMARY KEY (tenant_id, seq), "
            "ADD CONSTRAINT memlane_session_windows_turn_key UNIQUE (tenant_id, session_seq, turn), "
            "ADD CONSTRAINT memlane_session_windows_session_fkey FOREIGN KEY (tenant_id, session_seq) "
            "REFERENCES {schema}.memlane_sessions (tenant_id, seq) ON DELETE CASCADE"
        ),
        sql.SQL("CREATE INDEX ix_memlane_session_windows_seq ON {schema}.memlane_session_windows (seq)"),
        sql.SQL(
            "CREATE INDEX ix_memlane_session_windows_session_turn "
            "ON {schema}.memlane_session_windows (session_seq, turn)"
        ),
        sql.SQL(
            "ALTER TABLE {schema}.memlane_reembed_staging DROP CONSTRAINT memlane_reembed_staging_pkey, "
            "ADD CONSTRAINT memlane_reembed_staging_pkey PRIMARY KEY (tenant_id, seq)"
        ),
        sql.SQL(
            "ALTER TABLE {schema}.memlane_reembed_window_staging "
            "DROP CONSTRAINT memlane_reembed_window_staging_pkey, "
            "ADD CONSTRAINT memlane_reembed_window_staging_pkey PRIMARY KEY (tenant_id, seq)"
        ),
    ),
    # 10: keyword statistics per scope, kept as the rows change (memlane.stores.postgres.fts): the
    # stored rows and their total token count of every (tenant, session). Inserts add to it in their
    # transaction (PostgresStore); deletes subtract once per statement (transition table).
    (
        sql.SQL(
            "CREATE TABLE {schema}.memlane_scope_stats (tenant_id text NOT NULL, session_id text NOT NULL, "
            "rows bigint NOT NULL, tokens bigint NOT NULL, PRIMARY KEY (tenant_id, session_id))"
        ),
        sql.SQL(
            "INSERT INTO {schema}.memlane_scope_stats "
            "SELECT tenant_id, session_id, count(*), sum(token_count) "
            "FROM {schema}.memlane_episodes GROUP BY tenant_id, session_id"
        ),
        sql.SQL(
            "CREATE FUNCTION {schema}.memlane_scope_stats_delete() RETURNS trigger LANGUAGE plpgsql AS $$ "
            "BEGIN "
            "UPDATE {schema}.memlane_scope_stats AS s SET rows = s.rows - d.n, tokens = s.tokens - d.t "
            "FROM (SELECT tenant_id, session_id, count(*) AS n, sum(token_count) AS t FROM old_rows "
            "GROUP BY tenant_id, session_id) AS d "
            "WHERE s.tenant_id OPERATOR(pg_catalog.=) d.tenant_id "
            "AND s.session_id OPERATOR(pg_catalog.=) d.session_id; "
            "RETURN NULL; END $$"
        ),
        sql.SQL(
            "CREATE TRIGGER memlane_scope_stats_delete AFTER DELETE ON {schema}.memlane_episodes "
            "REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT "
            "EXECUTE FUNCTION {schema}.memlane_scope_stats_delete()"
        ),
    ),
    # 11: the knowledge graph (memlane.stores.postgres.graph, memlane.graph): entities and their
    # aliases, bi-temporal facts, recorded merges and episode -> entity links; tenant_id leads every
    # key (ready for a tenant-sharded cluster, as migration 9).
    (
        sql.SQL(
            "CREATE TABLE {schema}.memlane_graph_entities (tenant_id text NOT NULL, id text NOT NULL, "
            "name text NOT NULL, entity_type text NOT NULL, created_at timestamptz NOT NULL, merged_into "
            "text, "
            "PRIMARY KEY (tenant_id, id))"
        ),
        sql.SQL(
            "CREATE INDEX ix_memlane_graph_entities_merged ON {schema}.memlane_graph_entities "
            "(tenant_id, merged_into) WHERE merged_into IS NOT NULL"
        ),
        sql.SQL(
            "CREATE TABLE {schema}.memlane_graph_aliases (tenant_id text NOT NULL, alias text NOT NULL, "
            "entity_id text NOT NULL, created_at timestamptz NOT NULL, PRIMARY KEY (tenant_id, alias))"
        ),
        sql.SQL(
            "CREATE INDEX ix_memlane_graph_aliases_entity ON {schema}.memlane_graph_aliases (tenant_id, "
            "entity_id)"
        ),
        sql.SQL(
            """
            CREATE TABLE {schema}.memlane_graph_facts (
                seq               bigint GENERATED ALWAYS AS IDENTITY,
                id                text             NOT NULL,
                tenant_id         text             NOT NULL,
                session_id        text             NOT NULL,
                subject           text             NOT NULL,
                predicate         text             NOT NULL,
                object            text,
                value             text,
                valid_from        timestamptz      NOT NULL,
                valid_until       timestamptz,
                recorded_at       timestamptz      NOT NULL,
                invalidated_at    timestamptz,
                superseded_by     text,
                supersede_reason  text,
                confidence        double precision NOT NULL,
                importance        double precision,
                source_episode_id text,
                source_session_id text,
                method            text             NOT NULL,
                raw_predicate     text             NOT NULL,
                PRIMARY KEY (tenant_id, seq),
                CONSTRAINT memlane_graph_facts_tenant_id_key UNIQUE (tenant_id, id)
            )
            """
        ),
        sql.SQL(
            "CREATE INDEX ix_memlane_graph_facts_subject ON {schema}.memlane_graph_facts "
            "(tenant_id, subject, predicate, valid_from)"
        ),
        sql.SQL(
            "CREATE INDEX ix_memlane_graph_facts_object ON {schema}.memlane_graph_facts (tenant_id, object) "
            "WHERE object IS NOT NULL"
        ),
        sql.SQL(
            "CREATE INDEX ix_memlane_graph_facts_source ON {schema}.memlane_graph_facts "
            "(tenant_id, source_episode_id)"
        ),
        sql.SQL(
            "CREATE INDEX ix_memlane_graph_facts_source_session ON {schema}.memlane_graph_facts "
            "(tenant_id, source_session_id)"
        ),
        sql.SQL(
            "CREATE TABLE {schema}.memlane_graph_merges (seq bigint GENERATED ALWAYS AS IDENTITY, "
            "tenant_id text NOT NULL, kind text NOT NULL, source text NOT NULL, into_id text NOT NULL, "
            "merged_at timestamptz NOT NULL, reason text NOT NULL, PRIMARY KEY (tenant_id, seq))"
        ),
        sql.SQL(
            "CREATE TABLE {schema}.memlane_graph_episode_entities (tenant_id text NOT NULL, "
            "entity_id text NOT NULL, episode_id text NOT NULL, session_id text NOT NULL, "
            "created_at timestamptz NOT NULL, PRIMARY KEY (tenant_id, entity_id, episode_id))"
        ),
        sql.SQL(
            "CREATE INDEX ix_memlane_graph_episode_entities_episode "
            "ON {schema}.memlane_graph_episode_entities (tenant_id, episode_id)"
        ),
    ),
    # 12: the scope statistics of migration 10 change at commit, in one sorted statement. Writers
    # and the delete trigger append their deltas to memlane_scope_stats_pending (no row of it is
    # ever locked by another transaction); a deferred constraint trigger folds the transaction's
    # deltas into memlane_scope_stats when it commits, locking the (tenant, session) rows in key
    # order. Before, each statement locked its rows in hash order and mid-transaction, so two
    # concurrent writers touching the same scopes in other orders could deadlock (LangGraph's
    # test_large_batches on PostgreSQL did, now and then).
    (
        sql.SQL(
            "CREATE TABLE {schema}.memlane_scope_stats_pending (txid bigint NOT NULL, "
            "tenant_id text NOT NULL, session_id text NOT NULL, rows bigint NOT NULL, tokens bigint NOT NULL)"
        ),
        sql.SQL(
            "CREATE INDEX ix_memlane_scope_stats_pending_txid ON {schema}.memlane_scope_stats_pending (txid)"
        ),
        sql.SQL(
            "CREATE OR REPLACE FUNCTION {schema}.memlane_scope_stats_delete() RETURNS trigger "
            "LANGUAGE plpgsql AS $$ "
            "BEGIN "
            "INSERT INTO {schema}.memlane_scope_stats_pending (txid, tenant_id, session_id, rows, tokens) "
            "SELECT pg_catalog.txid_current(), tenant_id, session_id, -count(*), "
            "-coalesce(sum(token_count), 0) FROM old_rows GROUP BY tenant_id, session_id; "
            "RETURN NULL; END $$"
        ),
        sql.SQL(
            "CREATE FUNCTION {schema}.memlane_scope_stats_apply() RETURNS trigger LANGUAGE plpgsql AS $$ "
            "BEGIN "
            "WITH d AS (DELETE FROM {schema}.memlane_scope_stats_pending AS p "
            "WHERE p.txid OPERATOR(pg_catalog.=) pg_catalog.txid_current() "
            "RETURNING p.tenant_id, p.session_id, p.rows, p.tokens) "
            "INSERT INTO {schema}.memlane_scope_stats AS s (tenant_id, session_id, rows, tokens) "
            "SELECT tenant_id, session_id, sum(rows), sum(tokens) FROM d GROUP BY tenant_id, session_id "
            "ORDER BY tenant_id, session_id "
            "ON CONFLICT (tenant_id, session_id) DO UPDATE SET rows = s.rows OPERATOR(pg_catalog.+) "
            "excluded.rows, tokens = s.tokens OPERATOR(pg_catalog.+) excluded.tokens; "
            "RETURN NULL; END $$"
        ),
        sql.SQL(
            "CREATE CONSTRAINT TRIGGER memlane_scope_stats_apply AFTER INSERT "
            "ON {schema}.memlane_scope_stats_pending DEFERRABLE INITIALLY DEFERRED FOR EACH ROW "
            "EXECUTE FUNCTION {schema}.memlane_scope_stats_apply()"
        ),
    ),
    # 13: the facet index (memlane.stores.base.FACET_PATHS, memlane.stores.postgres.facets): the JSON
    # text at metadata path langgraph.namespace of the active rows (neither retired nor archived) by
    # event type and tenant, a partial index on the expression, so listing LangGraph namespaces walks
    # one index entry per distinct value (a loose index scan). Rows without the path are left out.
    (
        sql.SQL(
            "CREATE INDEX ix_memlane_episodes_facet_0 ON {schema}.memlane_episodes "
            "(event_type, tenant_id, ((metadata #> '{{langgraph,namespace}}'::text[])::text)) "
            "WHERE invalidated_at IS NULL AND archived_at IS NULL "
            "AND (metadata #> '{{langgraph,namespace}}'::text[]) IS NOT NULL"
        ),
    ),
    # 14: keyword document frequencies per scope, kept as the rows change (memlane.stores.postgres.fts):
    # how many stored rows of every (tenant, session) hold each term, so a recall reads its terms' df
    # with one index lookup instead of counting every term's rows. Writers and the delete trigger
    # append deltas to memlane_term_df_pending; the deferred fold of migration 12 folds them with
    # the scope statistics at commit, in key order (scope rows first, then term rows), so
    # concurrent writers never deadlock on them. Filled from the rows already stored.
    (
        sql.SQL(
            "CREATE TABLE {schema}.memlane_term_df (tenant_id text NOT NULL, session_id text NOT NULL, "
            "term text NOT NULL, df bigint NOT NULL, PRIMARY KEY (tenant_id, session_id, term))"
        ),
        sql.SQL("CREATE INDEX ix_memlane_term_df_term ON {schema}.memlane_term_df (term, tenant_id)"),
        sql.SQL(
            "CREATE TABLE {schema}.memlane_term_df_pending (txid bigint NOT NULL, tenant_id text NOT NULL, "
            "session_id text NOT NULL, term text NOT NULL, df bigint NOT NULL)"
        ),
        sql.SQL("CREATE INDEX ix_memlane_term_df_pending_txid ON {schema}.memlane_term_df_pending (txid)"),
        sql.SQL(
            "INSERT INTO {schema}.memlane_term_df (tenant_id, session_id, term, df) "
            "SELECT tenant_id, session_id, term, count(*) FROM (SELECT DISTINCT e.seq, e.tenant_id, "
            "e.session_id, u.term FROM {schema}.memlane_episodes AS e, "
            "pg_catalog.unnest(pg_catalog.string_to_array(e.terms, ' ')) AS u(term)) AS d "
            "GROUP BY tenant_id, session_id, term"
        ),
        sql.SQL(
            "CREATE OR REPLACE FUNCTION {schema}.memlane_scope_stats_delete() RETURNS trigger "
            "LANGUAGE plpgsql AS $$ "
            "BEGIN "
            "INSERT INTO {schema}.memlane_scope_stats_pending (txid, tenant_id, session_id, rows, tokens) "
            "SELECT pg_catalog.txid_current(), tenant_id, session_id, -count(*), "
            "-coalesce(sum(token_count), 0) FROM old_rows GROUP BY tenant_id, session_id; "
            "INSERT INTO {schema}.memlane_term_df_pending (txid, tenant_id, session_id, term, df) "
            "SELECT pg_catalog.txid_current(), tenant_id, session_id, term, -count(*) FROM "
            "(SELECT DISTINCT o.seq, o.tenant_id, o.session_id, u.term FROM old_rows AS o, "
            "pg_catalog.unnest(pg_catalog.string_to_array(o.terms, ' ')) AS u(term)) AS d "
            "GROUP BY tenant_id, session_id, term; "
            "RETURN NULL; END $$"
        ),
        sql.SQL(
            "CREATE OR REPLACE FUNCTION {schema}.memlane_scope_stats_apply() RETURNS trigger "
            "LANGUAGE plpgsql AS $$ "
            "BEGIN "
            "WITH d AS (DELETE FROM {schema}.memlane_scope_stats_pending AS p "
            "WHERE p.txid OPERATOR(pg_catalog.=) pg_catalog.txid_current() "
            "RETURNING p.tenant_id, p.session_id, p.rows, p.tokens) "
            "INSERT INTO {schema}.memlane_scope_stats AS s (tenant_id, session_id, rows, tokens) "
            "SELECT tenant_id, session_id, sum(rows), sum(tokens) FROM d GROUP BY tenant_id, session_id "
            "ORDER BY tenant_id, session_id "
            "ON CONFLICT (tenant_id, session_id) DO UPDATE SET rows = s.rows OPERATOR(pg_catalog.+) "
            "excluded.rows, tokens = s.tokens OPERATOR(pg_catalog.+) excluded.tokens; "
            "WITH d AS (DELETE FROM {schema}.memlane_term_df_pending AS p "
            "WHERE p.txid OPERATOR(pg_catalog.=) pg_catalog.txid_current() "
            "RETURNING p.tenant_id, p.session_id, p.term, p.df) "
            "INSERT INTO {schema}.memlane_term_df AS s (tenant_id, session_id, term, df) "
            "SELECT tenant_id, session_id, term, sum(df) FROM d GROUP BY tenant_id, session_id, term "
            "ORDER BY tenant_id, session_id, term "
            "ON CONFLICT (tenant_id, session_id, term) DO UPDATE SET df = s.df OPERATOR(pg_catalog.+) "
            "excluded.df; "
            "RETURN NULL; END $$"
        ),
    ),
    # 15: episode rows stay whole in the heap up to a page (toast_tuple_target 8160, PostgreSQL's
    # most): a row past 2 kB used to have its vector (pgvector's storage is EXTERNAL) moved to the
    # TOAST table, so an exact scan fetched about half the vectors of 384 dims through the TOAST
    # index (10,000 rows: 15,000 buffers and 42 ms; inline 2,750 buffers and 17 ms). Rows over a
    # page are still toasted, biggest column first. Applies to rows written from now on: rows
    # already stored keep their toasted vectors until the table is rewritten (VACUUM FULL).
    (sql.SQL("ALTER TABLE {schema}.memlane_episodes SET (toast_tuple_target = 8160)"),),
    # 16: the HNSW index becomes partial up to a watermark recorded in memlane_meta, so writes
    # skip it and its unindexed tail is searched exactly (memlane.stores.postgres.vector_index).
    # A schema without the index (unbound, dropped, or over 2,000 dims) records watermark 0: every
    # row is the tail. A full index kept from before records nothing: it still holds every row and
    # is maintained by writes as before, until the first fold (optimize, build_vector_index)
    # replaces it by a partial one. No row is rewritten.
    (record_watermark,),
    # 17: the changes since a snapshot, for the in-memory keyword postings of every process
    # (memlane.stores.postgres.postings). Each row records the transaction that wrote it (xid, the
    # top-level pg_current_xact_id(); rows stored before stay NULL: older than any snapshot a process
    # catches up from), so a process reads only the rows its last snapshot did not see. Deletes and
    # rewrites of an indexed column log the old row keys in memlane_deletions, insert-only, by
    # statement (a rewritten row also takes the new xid); a deleting transaction that gets the
    # *tried* advisory lock PRUNE_LOCK_KEY drops the entries older than DELETIONS_KEPT and logs the
    # highest pruned xid (pruned_below) instead, so a process behind it re-reads every row key once.
    # Idempotent (IF NOT EXISTS, OR REPLACE): a schema rolled back to an earlier version re-runs it.
    (
        sql.SQL("ALTER TABLE {schema}.memlane_episodes ADD COLUMN IF NOT EXISTS xid pg_catalog.xid8"),
        sql.SQL(
            "ALTER TABLE {schema}.memlane_episodes "
            "ALTER COLUMN xid SET DEFAULT pg_catalog.pg_current_xact_id()"
        ),
        sql.SQL("CREATE INDEX IF NOT EXISTS ix_memlane_episodes_xid ON {schema}.memlane_episodes (xid)"),
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {schema}.memlane_deletions ("
            "xid pg_catalog.xid8 NOT NULL DEFAULT pg_catalog.pg_current_xact_id(), seq bigint, "
            "pruned_below pg_catalog.xid8, logged_at timestamptz NOT NULL DEFAULT pg_catalog.now())"
        ),
        sql.SQL("CREATE INDEX IF NOT EXISTS ix_memlane_deletions_xid ON {schema}.memlane_deletions (xid)"),
        sql.SQL(
            "CREATE INDEX IF NOT EXISTS ix_memlane_deletions_logged_at "
            "ON {schema}.memlane_deletions (logged_at)"
        ),
        sql.SQL(
            "CREATE OR REPLACE FUNCTION {schema}.memlane_log_deletions() RETURNS trigger "
            "LANGUAGE plpgsql AS $$ "
            "BEGIN "
            "INSERT INTO {schema}.memlane_deletions (seq) SELECT seq FROM old_rows; "
            "IF pg_catalog.pg_try_advisory_xact_lock(" + str(PRUNE_LOCK_KEY) + "::int8) THEN "
            "WITH gone AS (DELETE FROM {schema}.memlane_deletions "
            "WHERE logged_at OPERATOR(pg_catalog.<) (pg_catalog.now() OPERATOR(pg_catalog.-) '"
            + DELETIONS_KEPT
            + "'::interval) RETURNING xid, pruned_below) "
            "INSERT INTO {schema}.memlane_deletions (pruned_below) "
            "SELECT pg_catalog.max(GREATEST(xid, pruned_below)) FROM gone HAVING pg_catalog.count(*) > 0; "
            "END IF; "
            "RETURN NULL; END $$"
        ),
        sql.SQL("DROP TRIGGER IF EXISTS memlane_log_deletions ON {schema}.memlane_episodes"),
        sql.SQL(
            "CREATE TRIGGER memlane_log_deletions AFTER DELETE ON {schema}.memlane_episodes "
            "REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT "
            "EXECUTE FUNCTION {schema}.memlane_log_deletions()"
        ),
        sql.SQL(
            "CREATE OR REPLACE FUNCTION {schema}.memlane_log_rewrite() RETURNS trigger "
            "LANGUAGE plpgsql AS $$ "
            "BEGIN "
            "INSERT INTO {schema}.memlane_deletions (seq) VALUES (OLD.seq); "
            "NEW.xid := pg_catalog.pg_current_xact_id(); "
            "RETURN NEW; END $$"
        ),
        sql.SQL("DROP TRIGGER IF EXISTS memlane_log_rewrite ON {schema}.memlane_episodes"),
        sql.SQL(
            "CREATE TRIGGER memlane_log_rewrite BEFORE UPDATE OF "
            "tenant_id, session_id, terms, token_count, created_at, importance, tags "
            "ON {schema}.memlane_episodes FOR EACH ROW EXECUTE FUNCTION {schema}.memlane_log_rewrite()"
        ),
    ),
    # 18: the value index (memlane.stores.base.VALUE_INDEX_ROOTS, memlane.stores.postgres.filters): every
    # string, number and boolean leaf under metadata path langgraph.value, one row (tenant_id, seq, path,
    # kind, value_text or value_num), the path as a text[] of keys from the metadata's root, kind as
    # MetadataCondition.kind names it (a boolean's value_text is 'true'/'false'), strings in code-point
    # order (COLLATE "C"). Kept by triggers: inserts and deletes once per statement (transition tables),
    # an UPDATE that sets metadata per row when the value changed; the existing rows are backfilled.
    # Every step can run again over its own result (IF NOT EXISTS, OR REPLACE, the backfill redone).
    (
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {schema}.memlane_episode_metadata_values (tenant_id text NOT NULL, "
            "seq bigint NOT NULL, path text[] NOT NULL, kind text NOT NULL, "
            'value_text text COLLATE "C", value_num numeric)'
        ),
        sql.SQL(
            "CREATE INDEX IF NOT EXISTS ix_memlane_episode_metadata_values_text "
            "ON {schema}.memlane_episode_metadata_values (path, kind, value_text, seq) "
            "WHERE value_text IS NOT NULL"
        ),
        sql.SQL(
            "CREATE INDEX IF NOT EXISTS ix_memlane_episode_metadata_values_num "
            "ON {schema}.memlane_episode_metadata_values (path, value_num, seq) WHERE value_num IS NOT NULL"
        ),
        sql.SQL(
            "CREATE INDEX IF NOT EXISTS ix_memlane_episode_metadata_values_seq "
            "ON {schema}.memlane_episode_metadata_values (seq)"
        ),
        sql.SQL(
            "CREATE OR REPLACE FUNCTION {schema}.memlane_value_leaves(doc json) "
            "RETURNS TABLE (path text[], kind text, value_text text, value_num numeric) "
            "LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$ "
            "WITH RECURSIVE walk(path, value) AS ("
            "SELECT ARRAY['langgraph', 'value'], doc #> '{{langgraph,value}}' "
            "WHERE json_typeof(doc #> '{{langgraph,value}}') = 'object' "
            "UNION ALL SELECT walk.path || e.key, e.value FROM walk, "
            "json_each(CASE WHEN json_typeof(walk.value) = 'object' THEN walk.value "
            "ELSE '{{}}'::json END) AS e) "
            "SELECT path, CASE json_typeof(value) WHEN 'number' THEN 'number' WHEN 'string' THEN 'string' "
            "ELSE 'boolean' END, CASE WHEN json_typeof(value) <> 'number' THEN value #>> '{{}}' END, "
            "CASE WHEN json_typeof(value) = 'number' THEN (value #>> '{{}}')::numeric END "
            "FROM walk WHERE json_typeof(value) IN ('string', 'number', 'boolean') $$"
        ),
        sql.SQL(
            "CREATE OR REPLACE FUNCTION {schema}.memlane_values_insert() RETURNS trigger LANGUAGE plpgsql "
            "SET search_path = pg_catalog, pg_temp AS $$ BEGIN "
            "INSERT INTO {schema}.memlane_episode_metadata_values "
            "SELECT n.tenant_id, n.seq, l.path, l.kind, l.value_text, l.value_num "
            "FROM new_rows AS n, {schema}.memlane_value_leaves(n.metadata) AS l "
            "WHERE n.metadata #> '{{langgraph,value}}' IS NOT NULL; "
            "RETURN NULL; END $$"
        ),
        sql.SQL("DROP TRIGGER IF EXISTS memlane_values_insert ON {schema}.memlane_episodes"),
        sql.SQL(
            "CREATE TRIGGER memlane_values_insert AFTER INSERT ON {schema}.memlane_episodes "
            "REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT "
            "EXECUTE FUNCTION {schema}.memlane_values_insert()"
        ),
        sql.SQL(
            "CREATE OR REPLACE FUNCTION {schema}.memlane_values_delete() RETURNS trigger LANGUAGE plpgsql "
            "SET search_path = pg_catalog, pg_temp AS $$ BEGIN "
            "DELETE FROM {schema}.memlane_episode_metadata_values AS v USING old_rows AS o "
            "WHERE v.seq = o.seq AND o.metadata #> '{{langgraph,value}}' IS NOT NULL; "
            "RETURN NULL; END $$"
        ),
        sql.SQL("DROP TRIGGER IF EXISTS memlane_values_delete ON {schema}.memlane_episodes"),
        sql.SQL(
            "CREATE TRIGGER memlane_values_delete AFTER DELETE ON {schema}.memlane_episodes "
            "REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT "
            "EXECUTE FUNCTION {schema}.memlane_values_delete()"
        ),
        sql.SQL(
            "CREATE OR REPLACE FUNCTION {schema}.memlane_values_update() RETURNS trigger LANGUAGE plpgsql "
            "SET search_path = pg_catalog, pg_temp AS $$ BEGIN "
            "DELETE FROM {schema}.memlane_episode_metadata_values WHERE seq = OLD.seq; "
            "INSERT INTO {schema}.memlane_episode_metadata_values "
            "SELECT NEW.tenant_id, NEW.seq, l.path, l.kind, l.value_text, l.value_num "
            "FROM {schema}.memlane_value_leaves(NEW.metadata) AS l; "
            "RETURN NULL; END $$"
        ),
        sql.SQL("DROP TRIGGER IF EXISTS memlane_values_update ON {schema}.memlane_episodes"),
        sql.SQL(
            "CREATE TRIGGER memlane_values_update AFTER UPDATE OF metadata ON {schema}.memlane_episodes "
            "FOR EACH ROW WHEN ((OLD.metadata #> '{{langgraph,value}}')::jsonb "
            "IS DISTINCT FROM (NEW.metadata #> '{{langgraph,value}}')::jsonb) "
            "EXECUTE FUNCTION {schema}.memlane_values_update()"
        ),
        sql.SQL("DELETE FROM {schema}.memlane_episode_metadata_values"),
        sql.SQL(
            "INSERT INTO {schema}.memlane_episode_metadata_values "
            "SELECT e.tenant_id, e.seq, l.path, l.kind, l.value_text, l.value_num "
            "FROM {schema}.memlane_episodes AS e, {schema}.memlane_value_leaves(e.metadata) AS l "
            "WHERE e.metadata #> '{{langgraph,value}}' IS NOT NULL"
        ),
    ),
    # 19: the (tenant_id, session_id, seq) index also carries the columns of the default recall
    # filter (archived_at, valid_until, invalidated_at), so the vector search's bounded count of a
    # scope (memlane.stores.postgres.vector_search, ``choose_path``) is an index-only scan instead of
    # a heap scan of up to ``exact_search_limit + 1`` rows: at 100k rows of ~2 kB, 1.8 ms against
    # 8.8 ms with the heap cached (14 ms when not). The same key, so the neighbour probes and the seq
    # span that use it are unchanged. Rebuilds the index (once, in the migration's transaction).
    (
        sql.SQL("DROP INDEX IF EXISTS {schema}.ix_memlane_episodes_session_seq"),
        sql.SQL(
            "CREATE INDEX ix_memlane_episodes_session_seq ON {schema}.memlane_episodes "
            "(tenant_id, session_id, seq) INCLUDE (archived_at, valid_until, invalidated_at)"
        ),
    ),
    # 20: retrieval bookkeeping off the episode rows (memlane.stores.postgres.lifecycle.record_retrievals):
    # the counts added since insert live in memlane_retrievals, one narrow row per retrieved episode
    # with one index (its key), so a flush is an upsert there instead of an UPDATE of the ~2 KB inline
    # episode rows (rarely HOT: every new row version went into all the episodes' indexes). The
    # episodes' retrieve_count / last_retrieved_at keep the values written at insert (existing counts
    # stay there, nothing is copied); the effective values add both (PostgresStore's _COLUMNS).
    # Deleting episodes deletes their rows here (a statement trigger on the transition table).
    # Every step can run again over its own result (IF NOT EXISTS, OR REPLACE).
    (
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {schema}.memlane_retrievals (tenant_id text NOT NULL, "
            "seq bigint NOT NULL, added_retrievals bigint NOT NULL, added_last_retrieved_at timestamptz "
            "NOT NULL, PRIMARY KEY (tenant_id, seq))"
        ),
        sql.SQL(
            "CREATE OR REPLACE FUNCTION {schema}.memlane_retrievals_delete() RETURNS trigger "
            "LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$ BEGIN "
            "DELETE FROM {schema}.memlane_retrievals AS r USING old_rows AS o "
            "WHERE r.tenant_id = o.tenant_id AND r.seq = o.seq; "
            "RETURN NULL; END $$"
        ),
        sql.SQL("DROP TRIGGER IF EXISTS memlane_retrievals_delete ON {schema}.memlane_episodes"),
        sql.SQL(
            "CREATE TRIGGER memlane_retrievals_delete AFTER DELETE ON {schema}.memlane_episodes "
            "REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT "
            "EXECUTE FUNCTION {schema}.memlane_retrievals_delete()"
        ),
    ),
)


def bind_vector_statements(dims: int) -> tuple[sql.SQL, ...]:
    """The dimension-keyed schema step run once, when the first embedding model is bound.

    Args:
        dims: Vector dimension, >= 1. The store fills the ``{dims}`` placeholder with
            ``sql.Literal(int(dims))``, never with text.

    Returns:
        Templates (with ``{schema}``, ``{ext}`` and ``{dims}``) that type the column as
        ``vector(dims)``. The HNSW cosine index (pgvector defaults ``m = 16``,
        ``ef_construction = 64``; only when ``dims <= HNSW_MAX_DIMS``) is then built by
        :func:`memlane.stores.postgres.vector_index.fold`, partial up to its watermark.
    """
    del dims  # the placeholder is filled by the caller
    return (
        sql.SQL("ALTER TABLE {schema}.memlane_episodes ALTER COLUMN embedding TYPE {ext}.vector({dims})"),
    )


def read_version(conn: psycopg.Connection[Any], schema: sql.Identifier) -> int:
    """The highest applied migration number of ``schema`` (0 before the first)."""
    row = conn.execute(
        sql.SQL("SELECT coalesce(max(version), 0) FROM {schema}.memlane_schema_migrations").format(
            schema=schema
        )
    ).fetchone()
    return int(row[0]) if row else 0


def is_current(conn: psycopg.Connection[Any], schema: str) -> bool:
    """Whether ``schema`` is already at the latest version (read without a lock)."""
    with conn.transaction():
        row = conn.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = %s AND tablename = %s)",
            (schema, MIGRATIONS_TABLE),
        ).fetchone()
        if not row or not row[0]:
            return False
        return read_version(conn, sql.Identifier(schema)) == len(MIGRATIONS)


def ext_schema(conn: psycopg.Connection[Any]) -> sql.Identifier:
    """The schema pgvector's objects live in.

    Raises:
        StoreError: the extension is not installed.
    """
    row = conn.execute(
        "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
        "WHERE e.extname = 'vector'"
    ).fetchone()
    if row is None:
        raise StoreError("the pgvector extension is not installed")
    return sql.Identifier(row[0])


def apply_migration(
    conn: psycopg.Connection[Any], schema: sql.Identifier, ext: sql.Identifier, number: int
) -> None:
    """Run the steps of migration ``number`` (1-based) on ``schema`` and record it (caller's transaction).

    Args:
        conn: A connection inside the migrating transaction.
        schema: The schema, at version ``number - 1``.
        ext: The schema of pgvector's objects (:func:`ext_schema`).
        number: The migration, ``1 <= number <= len(MIGRATIONS)``.
    """
    for step in MIGRATIONS[number - 1]:
        if isinstance(step, sql.SQL):
            conn.execute(step.format(schema=schema, ext=ext))
        else:
            step(conn, schema)
    conn.execute(
        sql.SQL("INSERT INTO {schema}.memlane_schema_migrations (version) VALUES (%s)").format(schema=schema),
        (number,),
    )


def migrate(conn: psycopg.Connection[Any], schema: str, location: str) -> None:
    """Create pgvector, the schema and the tables as needed, under an advisory lock (one transaction).

    Args:
        conn: A connection (any autocommit mode).
        schema: The schema name (a plain identifier).
        location: The redacted server URL, for messages.

    Raises:
        SchemaVersionError: the schema was written by a newer memlane.
        StoreError: pgvector is missing and cannot be created, or the schema holds a
            ``memlane_episodes`` table memlane did not create.
    """
    schema_id = sql.Identifier(schema)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))
        if not conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
            try:
                with conn.transaction():
                    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except psycopg.errors.InsufficientPrivilege as exc:
                raise StoreError(
                    f"{location}: the pgvector extension is not installed and this role "
                    "may not create it; ask an administrator to run CREATE EXTENSION vector"
                ) from exc
            except psycopg.errors.UndefinedFile as exc:  # pragma: no cover - server-dependent
                raise StoreError(
                    f"{location}: the pgvector extension is not installed on this server "
                    "(install pgvector >= 0.8, or use a managed PostgreSQL that offers it)"
                ) from exc
            logger.info("created the pgvector extension in %s", location)
        if not conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone():
            conn.execute(sql.SQL("CREATE SCHEMA {schema}").format(schema=schema_id))
        ext = ext_schema(conn)
        has_table = conn.execute(
            "SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = %s AND tablename = 'memlane_episodes'",
            (schema,),
        ).fetchone()
        conn.execute(BOOTSTRAP.format(schema=schema_id))
        version = read_version(conn, schema_id)
        if version > len(MIGRATIONS):
            raise SchemaVersionError(
                f"{location} schema {schema!r} has version {version}, this memlane knows up "
                f"to {len(MIGRATIONS)}: upgrade memlane"
            )
        if version == 0 and has_table:
            raise StoreError(
                f"{location} schema {schema!r} has a memlane_episodes table that memlane did "
                "not create (no migration record): refusing to use it"
            )
        for number in range(version + 1, len(MIGRATIONS) + 1):
            apply_migration(conn, schema_id, ext, number)
            logger.info("migrated %s schema %r to version %d", location, schema, number)
