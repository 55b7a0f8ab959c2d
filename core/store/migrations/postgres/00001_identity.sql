-- +goose Up
CREATE TABLE users (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id    UUID   NOT NULL UNIQUE,
    handle       TEXT   NOT NULL UNIQUE,
    display_name TEXT   NOT NULL,
    created_at   BIGINT NOT NULL
);

CREATE TABLE workspaces (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id  UUID   NOT NULL UNIQUE,
    handle     TEXT   NOT NULL UNIQUE,
    name       TEXT   NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE workspace_members (
    workspace_id BIGINT NOT NULL REFERENCES workspaces (id),
    user_id      BIGINT NOT NULL REFERENCES users (id),
    role         TEXT   NOT NULL CHECK (role IN ('owner', 'member')),
    joined_at    BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, user_id)
);
CREATE INDEX workspace_members_user ON workspace_members (user_id);

CREATE TABLE agents (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id       UUID   NOT NULL UNIQUE,
    workspace_id    BIGINT NOT NULL REFERENCES workspaces (id),
    handle          TEXT   NOT NULL,
    display_name    TEXT   NOT NULL,
    steward_user_id BIGINT NOT NULL REFERENCES users (id),
    created_at      BIGINT NOT NULL,
    removed_at      BIGINT,
    UNIQUE (workspace_id, handle)
);

CREATE TABLE tokens (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id    UUID   NOT NULL UNIQUE,
    secret_hash  BYTEA  NOT NULL UNIQUE,
    user_id      BIGINT REFERENCES users (id),
    agent_id     BIGINT REFERENCES agents (id),
    label        TEXT   NOT NULL DEFAULT '',
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT,
    revoked_at   BIGINT,
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
