-- +goose Up
-- An agent's standing configuration (docs/api.md#agent-profiles). tool_definitions is the stored
-- render of the explicit declaration (rendered, sorted, compact:
-- docs/development.md#the-declaration-compiler), kept as text, never jsonb, which would reorder its
-- keys; the import fields are JSON arrays (runner_tool_names NULL means "all"). revision counts
-- replacements, so accepted work can name the profile it froze.
CREATE TABLE agent_profiles (
    agent_id                   BIGINT PRIMARY KEY REFERENCES agents (id),
    revision                   BIGINT NOT NULL,
    tool_definitions           TEXT   NOT NULL,
    kernel_tools               TEXT   NOT NULL,
    runner_executor_public_ids TEXT   NOT NULL,
    runner_tool_names          TEXT,
    approval_mode              TEXT   CHECK (approval_mode IN ('bypass', 'ask', 'rules')),
    approval_rules             TEXT,
    default_model              TEXT,
    instructions               TEXT,
    updated_at                 BIGINT NOT NULL
);

-- An executor's current announcement (docs/api.md#the-executor-plane), replaced whole on every PUT:
-- the tool entries and documents in sdk/announce's stored form, the environment object, as text.
CREATE TABLE executor_announcements (
    executor_id  BIGINT PRIMARY KEY REFERENCES executors (id),
    tools        TEXT   NOT NULL,
    environment  TEXT   NOT NULL,
    documents    TEXT   NOT NULL,
    announced_at BIGINT NOT NULL
);

-- +goose Down
DROP TABLE executor_announcements;
DROP TABLE agent_profiles;
