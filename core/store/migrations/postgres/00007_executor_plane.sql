-- +goose Up
-- The names each executor currently announces, one row per served name, replaced with the
-- announcement in the same transaction (docs/api.md#the-executor-plane). Addressing reads it at
-- every birth (docs/development.md#how-the-kernel-runs-work): a Runner route is one primary-key
-- lookup and a tool provider pool one indexed scan, instead of decoding every announcement of the
-- workspace. profile is the announced effect profile as stored JSON; timeout_ms the announced park
-- budget, null when none.
CREATE TABLE executor_served_tools (
    executor_id  BIGINT  NOT NULL REFERENCES executors (id),
    workspace_id BIGINT  NOT NULL REFERENCES workspaces (id),
    name         TEXT    NOT NULL,
    profile      TEXT    NOT NULL,
    timeout_ms   BIGINT,
    PRIMARY KEY (executor_id, name)
);
CREATE INDEX executor_served_tools_pool ON executor_served_tools (workspace_id, name);

-- The executor inbox (docs/api.md#the-executor-plane): dispatched rows addressed to one executor,
-- and dispatched pool rows by served name, each in dispatch order.
CREATE INDEX tasks_inbox_addressed ON tasks (addressed_executor_public_id, dispatched_at) WHERE status = 'dispatched';
CREATE INDEX tasks_inbox_pool ON tasks (tool_name, dispatched_at) WHERE status = 'dispatched' AND addressed_role = 'tool_provider' AND addressed_executor_public_id IS NULL;

-- +goose Down
DROP INDEX tasks_inbox_pool;
DROP INDEX tasks_inbox_addressed;
DROP TABLE executor_served_tools;
