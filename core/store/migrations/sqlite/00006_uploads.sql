-- +goose Up
-- An upload is one file a member or an executor staged (docs/api.md#uploads). Its bytes live in
-- upload_chunks; the row is readable and bindable only once completed_at is set, in the
-- transaction that writes the last chunk, so content_type and sha256 stay null until then.
-- Exactly one creator column is set, the one creator_kind names; creator_public_id repeats the
-- creator's public id so that a descriptor is read without a join.
CREATE TABLE uploads (
    id                  INTEGER PRIMARY KEY,
    public_id           TEXT    NOT NULL UNIQUE,
    creator_kind        TEXT    NOT NULL CHECK (creator_kind IN ('user', 'agent', 'runner', 'tool_provider')),
    creator_user_id     INTEGER REFERENCES users (id),
    creator_agent_id    INTEGER REFERENCES agents (id),
    creator_executor_id INTEGER REFERENCES executors (id),
    creator_public_id   TEXT    NOT NULL,
    filename            TEXT    NOT NULL,
    content_type        TEXT,
    byte_size           INTEGER NOT NULL CHECK (byte_size >= 0),
    sha256              TEXT,
    created_at          INTEGER NOT NULL,
    completed_at        INTEGER,
    CHECK ((creator_kind = 'user') = (creator_user_id IS NOT NULL)),
    CHECK ((creator_kind = 'agent') = (creator_agent_id IS NOT NULL)),
    CHECK ((creator_kind IN ('runner', 'tool_provider')) = (creator_executor_id IS NOT NULL))
);
-- The sweeper's scan: the oldest rows first.
CREATE INDEX uploads_created ON uploads (created_at);

-- One chunk of 1 MiB (the last may be shorter), written in its own short transaction.
CREATE TABLE upload_chunks (
    upload_id INTEGER NOT NULL REFERENCES uploads (id),
    seq       INTEGER NOT NULL CHECK (seq >= 0),
    data      BLOB    NOT NULL,
    PRIMARY KEY (upload_id, seq)
);

-- A row that keeps an upload alive: a task's result, a task's input (a model step) or a turn's
-- input. target_id is the internal id of that task or turn (no foreign key: the binding rows
-- are written by the run engine inside its own transactions, and rows that bind are never
-- deleted). workspace_id is the workspace of the run or conversation, the one whose members may
-- read the upload.
CREATE TABLE upload_bindings (
    upload_id    INTEGER NOT NULL REFERENCES uploads (id),
    target_kind  TEXT    NOT NULL CHECK (target_kind IN ('task_result', 'task_input', 'turn_input')),
    target_id    INTEGER NOT NULL,
    workspace_id INTEGER NOT NULL REFERENCES workspaces (id),
    bound_at     INTEGER NOT NULL,
    PRIMARY KEY (upload_id, target_kind, target_id)
);
CREATE INDEX upload_bindings_target ON upload_bindings (target_kind, target_id);

-- When the executor's current event stream opened (docs/api.md#executors); null while none is open.
ALTER TABLE executors ADD COLUMN connected_at INTEGER;

-- +goose Down
ALTER TABLE executors DROP COLUMN connected_at;
DROP TABLE upload_bindings;
DROP TABLE upload_chunks;
DROP TABLE uploads;
