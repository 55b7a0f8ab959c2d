-- +goose Up
CREATE TABLE users (
    id           INTEGER PRIMARY KEY,
    public_id    TEXT    NOT NULL UNIQUE,
    handle       TEXT    NOT NULL UNIQUE,
    display_name TEXT    NOT NULL,
    created_at   INTEGER NOT NULL
);

CREATE TABLE workspaces (
    id         INTEGER PRIMARY KEY,
    public_id  TEXT    NOT NULL UNIQUE,
    handle     TEXT    NOT NULL UNIQUE,
    name       TEXT    NOT NULL,
    created_at INTEGER NOT NULL
);

CREATE TABLE workspace_members (
    workspace_id INTEGER NOT NULL REFERENCES workspaces (id),
    user_id      INTEGER NOT NULL REFERENCES users (id),
    role         TEXT    NOT NULL CHECK (role IN ('owner', 'member')),
    joined_at    INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, user_id)
);
CREATE INDEX workspace_members_user ON workspace_members (user_id);

CREATE TABLE agents (
    id              INTEGER PRIMARY KEY,
    public_id       TEXT    NOT NULL UNIQUE,
    workspace_id    INTEGER NOT NULL REFERENCES workspaces (id),
    handle          TEXT    NOT NULL,
    display_name    TEXT    NOT NULL,
    steward_user_id INTEGER NOT NULL REFERENCES users (id),
    created_at      INTEGER NOT NULL,
    removed_at      INTEGER,
    UNIQUE (workspace_id, handle)
);

CREATE TABLE tokens (
    id           INTEGER PRIMARY KEY,
    public_id    TEXT    NOT NULL UNIQUE,
    secret_hash  BLOB    NOT NULL UNIQUE,
    user_id      INTEGER REFERENCES users (id),
    agent_id     INTEGER REFERENCES agents (id),
    label        TEXT    NOT NULL DEFAULT '',
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER,
    revoked_at   INTEGER,
    CHECK ((user_id IS NULL) <> (agent_id IS NULL))
);
CREATE INDEX tokens_user ON tokens (user_id);
CREATE INDEX tokens_agent ON tokens (agent_id);

-- +goose Down
DROP TABLE tokens;
DROP TABLE agents;
DROP TABLE workspace_members;
DROP TABLE workspaces;
DROP TABLE users;
