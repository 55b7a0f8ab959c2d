-- +goose Up
CREATE TABLE executors (
    id           INTEGER PRIMARY KEY,
    public_id    TEXT    NOT NULL UNIQUE,
    workspace_id INTEGER NOT NULL REFERENCES workspaces (id),
    kind         TEXT    NOT NULL CHECK (kind IN ('runner', 'tool_provider')),
    display_name TEXT    NOT NULL,
    status       TEXT    NOT NULL CHECK (status IN ('active', 'revoked')),
    created_at   INTEGER NOT NULL,
    revoked_at   INTEGER,
    last_seen_at INTEGER
);
CREATE INDEX executors_workspace ON executors (workspace_id, display_name);

CREATE TABLE executor_tokens (
    id          INTEGER PRIMARY KEY,
    public_id   TEXT    NOT NULL UNIQUE,
    executor_id INTEGER NOT NULL REFERENCES executors (id),
    secret_hash BLOB    NOT NULL UNIQUE,
    created_at  INTEGER NOT NULL,
    revoked_at  INTEGER
);
CREATE INDEX executor_tokens_executor ON executor_tokens (executor_id);

-- +goose Down
DROP TABLE executor_tokens;
DROP TABLE executors;
