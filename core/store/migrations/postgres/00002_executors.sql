-- +goose Up
CREATE TABLE executors (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id    UUID   NOT NULL UNIQUE,
    workspace_id BIGINT NOT NULL REFERENCES workspaces (id),
    kind         TEXT   NOT NULL CHECK (kind IN ('runner', 'tool_provider')),
    display_name TEXT   NOT NULL,
    status       TEXT   NOT NULL CHECK (status IN ('active', 'revoked')),
    created_at   BIGINT NOT NULL,
    revoked_at   BIGINT,
    last_seen_at BIGINT
);
CREATE INDEX executors_workspace ON executors (workspace_id, display_name);

CREATE TABLE executor_tokens (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id   UUID   NOT NULL UNIQUE,
    executor_id BIGINT NOT NULL REFERENCES executors (id),
    secret_hash BYTEA  NOT NULL UNIQUE,
    created_at  BIGINT NOT NULL,
    revoked_at  BIGINT
);
CREATE INDEX executor_tokens_executor ON executor_tokens (executor_id);

-- +goose Down
DROP TABLE executor_tokens;
DROP TABLE executors;
