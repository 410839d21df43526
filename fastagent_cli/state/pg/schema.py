"""The database schema, as numbered migrations (applied in order, each once, by
:mod:`.migrations`).

Version 1:

* ``fastagent_sessions``: one row per session record (pi's v3 header line as stored, and the
  listing's summary kept up to date by every append: modified, counts, first prompt, name);
* ``fastagent_entries``: the record's entry lines, append-only, ``(rid, seq)`` unique, so two
  writers can never interleave one record;
* ``fastagent_fires`` / ``fastagent_wakeups``: the schedule claims;
* ``fastagent_channel_docs`` / ``fastagent_channel_journal``: channel state documents, a snapshot
  plus a journal with gap-free positions per document;
* ``fastagent_spill``: session events too large for one notification;
* ``fastagent_write(...)``: one round trip for everything an instance's link writes at once
  (entries, the summaries they change, event notifications, lease releases), in one transaction;
* ``fastagent_channel_append(...)``: one journal append, positions taken under the document's
  row lock, then a notification naming the new position.

Version 2:

* ``fastagent_runs``: the schedule run log (:mod:`.runs`), one row per scheduled or woken turn,
  its record as JSON text.
Version 3: ``fastagent_usage``, the usage ledger (one row per model answer; :mod:`.usage`).
"""

from __future__ import annotations

__all__ = ["MIGRATIONS", "Migration"]

Migration = tuple[int, str, str]
"""``(version, description, SQL)``."""

_V1 = r"""
CREATE TABLE fastagent_sessions (
    rid bigserial PRIMARY KEY,
    namespace text NOT NULL,
    session text NOT NULL,
    header text NOT NULL,
    created timestamptz NOT NULL,
    modified timestamptz NOT NULL DEFAULT clock_timestamp(),
    entry_count integer NOT NULL DEFAULT 0,
    message_count integer NOT NULL DEFAULT 0,
    first_prompt text NOT NULL DEFAULT '',
    name text,
    UNIQUE (namespace, session)
);
CREATE INDEX fastagent_sessions_recent ON fastagent_sessions (namespace, modified DESC);

CREATE TABLE fastagent_entries (
    rid bigint NOT NULL REFERENCES fastagent_sessions (rid) ON DELETE CASCADE,
    seq integer NOT NULL,
    line text NOT NULL,
    PRIMARY KEY (rid, seq)
);

CREATE TABLE fastagent_fires (
    namespace text NOT NULL,
    schedule text NOT NULL,
    fired_at timestamptz NOT NULL,
    PRIMARY KEY (namespace, schedule)
);

CREATE SEQUENCE fastagent_wakeup_order;
CREATE TABLE fastagent_wakeups (
    namespace text NOT NULL,
    id text NOT NULL,
    session text NOT NULL,
    body text NOT NULL,
    fire_at timestamptz NOT NULL,
    ord bigint NOT NULL DEFAULT nextval('fastagent_wakeup_order'),
    PRIMARY KEY (namespace, id)
);
CREATE INDEX fastagent_wakeups_due ON fastagent_wakeups (namespace, fire_at);

CREATE TABLE fastagent_channel_docs (
    namespace text NOT NULL,
    kind text NOT NULL,
    name text NOT NULL,
    snapshot text,
    snapshot_position bigint NOT NULL DEFAULT 0,
    position bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (namespace, kind, name)
);
CREATE TABLE fastagent_channel_journal (
    namespace text NOT NULL,
    kind text NOT NULL,
    name text NOT NULL,
    position bigint NOT NULL,
    entry text NOT NULL,
    PRIMARY KEY (namespace, kind, name, position)
);

CREATE TABLE fastagent_spill (
    id bigserial PRIMARY KEY,
    created timestamptz NOT NULL DEFAULT now(),
    payload text NOT NULL
);

CREATE FUNCTION fastagent_write(
    p_sync boolean,
    e_rid bigint[], e_seq integer[], e_line text[],
    s_rid bigint[], s_count integer[], s_messages integer[], s_first text[], s_name text[],
    n_channel text[], n_payload text[], n_instance text,
    u_key bigint[]
) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    i integer;
    spilled bigint;
BEGIN
    IF NOT p_sync THEN
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    INSERT INTO fastagent_entries (rid, seq, line) SELECT * FROM unnest(e_rid, e_seq, e_line);
    UPDATE fastagent_sessions AS s SET
        modified = clock_timestamp(),
        entry_count = s.entry_count + d.n,
        message_count = s.message_count + d.m,
        first_prompt = CASE WHEN s.first_prompt = '' AND d.f IS NOT NULL THEN d.f ELSE s.first_prompt END,
        name = COALESCE(d.nm, s.name)
    FROM unnest(s_rid, s_count, s_messages, s_first, s_name) AS d(rid, n, m, f, nm)
    WHERE s.rid = d.rid;
    FOR i IN 1 .. coalesce(array_length(n_channel, 1), 0) LOOP
        IF octet_length(n_payload[i]) > 7900 THEN
            INSERT INTO fastagent_spill (payload) VALUES (n_payload[i]) RETURNING id INTO spilled;
            PERFORM pg_notify(n_channel[i], json_build_object('i', n_instance, 'spill', spilled)::text);
            DELETE FROM fastagent_spill WHERE created < now() - interval '10 minutes';
        ELSE
            PERFORM pg_notify(n_channel[i], n_payload[i]);
        END IF;
    END LOOP;
    PERFORM pg_advisory_unlock(k) FROM unnest(u_key) AS k;
END
$$;

CREATE FUNCTION fastagent_channel_append(
    p_namespace text, p_kind text, p_name text, p_entries text[], p_sync boolean, p_channel text
) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    added integer := coalesce(array_length(p_entries, 1), 0);
    last bigint;
BEGIN
    IF NOT p_sync THEN
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    INSERT INTO fastagent_channel_docs AS d (namespace, kind, name, position)
        VALUES (p_namespace, p_kind, p_name, added)
        ON CONFLICT (namespace, kind, name) DO UPDATE SET position = d.position + added
        RETURNING d.position INTO last;
    INSERT INTO fastagent_channel_journal (namespace, kind, name, position, entry)
        SELECT p_namespace, p_kind, p_name, last - added + t.o, t.e
        FROM unnest(p_entries) WITH ORDINALITY AS t(e, o);
    PERFORM pg_notify(p_channel, json_build_object('kind', p_kind, 'name', p_name, 'position', last)::text);
    RETURN last;
END
$$;
"""

_V2 = r"""
CREATE TABLE fastagent_runs (
    id bigserial PRIMARY KEY,
    namespace text NOT NULL,
    name text NOT NULL,
    body text NOT NULL,
    recorded timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX fastagent_runs_by_name ON fastagent_runs (namespace, name, id);
"""

_V3 = r"""
CREATE TABLE fastagent_usage (
    id bigserial PRIMARY KEY,
    namespace text NOT NULL,
    at timestamptz NOT NULL,
    session text NOT NULL,
    model text NOT NULL,
    input bigint NOT NULL DEFAULT 0,
    output bigint NOT NULL DEFAULT 0,
    cache_read bigint NOT NULL DEFAULT 0,
    cache_write bigint NOT NULL DEFAULT 0,
    cost double precision NOT NULL DEFAULT 0
);
CREATE INDEX fastagent_usage_at ON fastagent_usage (namespace, at);
CREATE INDEX fastagent_usage_session ON fastagent_usage (namespace, session);
"""

MIGRATIONS: list[Migration] = [
    (1, "sessions, schedule claims, channel state, event spill", _V1),
    (2, "schedule run log", _V2),
    (3, "usage ledger", _V3),
]
