-- +goose Up
-- A workspace's agent messaging policy (docs/agent-tools.md#delegation-and-conversations): the JSON
-- object of agent public id to "public" or "private" as the owner last wrote it, and its lock
-- version; a workspace without a row has the empty map (every agent public) at lock version 0.
CREATE TABLE workspace_agent_messaging_policies (
    workspace_id BIGINT PRIMARY KEY REFERENCES workspaces (id),
    agents       TEXT    NOT NULL,
    lock_version BIGINT NOT NULL CHECK (lock_version >= 0)
);

-- +goose Down
DROP TABLE workspace_agent_messaging_policies;
