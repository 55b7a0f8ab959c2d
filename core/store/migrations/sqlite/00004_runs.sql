-- +goose Up
CREATE TABLE conversations (
    id                                 INTEGER PRIMARY KEY,
    public_id                          TEXT    NOT NULL UNIQUE,
    workspace_id                       INTEGER NOT NULL REFERENCES workspaces (id),
    title                              TEXT,
    answering_agent_id                 INTEGER NOT NULL REFERENCES agents (id),
    created_by_kind                    TEXT    NOT NULL,
    created_by_public_id               TEXT    NOT NULL,
    default_runner_executor_public_id  TEXT,
    parent_conversation_id             INTEGER REFERENCES conversations (id),
    label                              TEXT,
    status                             TEXT    NOT NULL CHECK (status IN ('active', 'archived')),
    created_at                         INTEGER NOT NULL,
    updated_at                         INTEGER NOT NULL,
    archived_at                        INTEGER
);
CREATE INDEX conversations_workspace ON conversations (workspace_id, id);

CREATE TABLE runs (
    id                                 INTEGER PRIMARY KEY,
    public_id                          TEXT    NOT NULL UNIQUE,
    workspace_id                       INTEGER NOT NULL REFERENCES workspaces (id),
    conversation_id                    INTEGER REFERENCES conversations (id),
    created_by_kind                    TEXT    NOT NULL,
    created_by_public_id               TEXT    NOT NULL,
    answering_agent_public_id          TEXT,
    status                             TEXT    NOT NULL,
    approval_mode                      TEXT    NOT NULL,
    approval_rules                     TEXT    NOT NULL,
    default_runner_executor_public_id  TEXT,
    deliverable_task_key               TEXT    NOT NULL,
    revision                           INTEGER NOT NULL,
    mainline_round_counter             INTEGER NOT NULL,
    memory_context                     TEXT    NOT NULL,
    answer                             TEXT,
    stop_requested_at                  INTEGER,
    stop_by_kind                       TEXT,
    stop_by_public_id                  TEXT,
    stop_force                         BOOLEAN,
    created_at                         INTEGER NOT NULL,
    started_at                         INTEGER,
    completed_at                       INTEGER,
    updated_at                         INTEGER NOT NULL
);
CREATE INDEX runs_workspace ON runs (workspace_id, id);
CREATE INDEX runs_conversation ON runs (conversation_id);
CREATE INDEX runs_status ON runs (status);

CREATE TABLE turns (
    id                                 INTEGER PRIMARY KEY,
    public_id                          TEXT    NOT NULL UNIQUE,
    conversation_id                    INTEGER NOT NULL REFERENCES conversations (id),
    position                           INTEGER NOT NULL,
    author_kind                        TEXT    NOT NULL,
    author_public_id                   TEXT,
    sender_conversation_public_id      TEXT,
    input_text                         TEXT    NOT NULL,
    input_attachments                  TEXT    NOT NULL,
    tool_names                         TEXT,
    model                              TEXT    NOT NULL,
    status                             TEXT    NOT NULL,
    run_id                             INTEGER NOT NULL REFERENCES runs (id),
    answer_task_key                    TEXT,
    answer_text                        TEXT,
    failure_key                        TEXT,
    failure_detail                     TEXT,
    created_at                         INTEGER NOT NULL,
    started_at                         INTEGER,
    completed_at                       INTEGER,
    UNIQUE (conversation_id, position)
);
CREATE INDEX turns_run ON turns (run_id);

CREATE TABLE tasks (
    id                                 INTEGER PRIMARY KEY,
    run_id                             INTEGER NOT NULL REFERENCES runs (id),
    task_key                           TEXT    NOT NULL,
    kind                               TEXT    NOT NULL,
    status                             TEXT    NOT NULL,
    mainline                           BOOLEAN NOT NULL,
    origin                             TEXT    NOT NULL,
    parent_key                         TEXT,
    declaring_task_key                 TEXT,
    after_keys                         TEXT,
    on_failure                         TEXT    NOT NULL,
    lifetime                           TEXT    NOT NULL,
    wake                               TEXT    NOT NULL,
    detached                           BOOLEAN NOT NULL,
    visibility                         TEXT    NOT NULL,
    failure_resolution                 TEXT,
    lineage_root                       TEXT    NOT NULL,
    round_number                       INTEGER NOT NULL,
    model                              TEXT,
    prompt                             TEXT,
    instructions                       TEXT,
    attachments                        TEXT,
    results                            TEXT,
    tool_definitions                   TEXT,
    skill_catalog                      TEXT,
    environment                        TEXT,
    finish                             TEXT,
    answer_calls                       TEXT,
    usage                              TEXT,
    attempts                           INTEGER NOT NULL,
    request_bytes                      INTEGER,
    sealed_request_id                  INTEGER,
    history_entries                    INTEGER,
    tool_name                          TEXT,
    tool_alias                         TEXT,
    tool_input                         TEXT,
    tool_call_id                       TEXT,
    route                              TEXT,
    target                             TEXT,
    addressed_role                     TEXT,
    addressed_executor_public_id       TEXT,
    effect_profile                     TEXT,
    timeout_ms                         INTEGER,
    deadline_at                        INTEGER,
    claim_generation                   INTEGER NOT NULL,
    claim_token_hash                   BLOB,
    claimed_by                         TEXT,
    claimed_at                         INTEGER,
    awaiting_child                     TEXT,
    lowered                            BOOLEAN NOT NULL,
    model_defaults                     TEXT,
    scope                              TEXT,
    await_kind                         TEXT,
    options                            TEXT,
    multi                              BOOLEAN,
    addressed_member                   TEXT,
    wait_spec                          TEXT,
    resolved_by                        TEXT,
    approval                           TEXT,
    is_error                           BOOLEAN,
    output                             TEXT,
    content                            TEXT,
    structured_content                 TEXT,
    title                              TEXT,
    metadata                           TEXT,
    error_key                          TEXT,
    error_detail                       TEXT,
    delivered_with                     TEXT,
    settle_seq                         INTEGER,
    created_at                         INTEGER NOT NULL,
    ready_at                           INTEGER,
    dispatched_at                      INTEGER,
    started_at                         INTEGER,
    completed_at                       INTEGER,
    result_delivered_at                INTEGER,
    UNIQUE (run_id, task_key)
);
CREATE INDEX tasks_runnable ON tasks (dispatched_at, id) WHERE status = 'running' AND claimed_at IS NULL;
CREATE INDEX tasks_deadline ON tasks (deadline_at) WHERE deadline_at IS NOT NULL AND status IN ('running', 'dispatched', 'awaiting_input', 'needs_approval');
CREATE INDEX tasks_held ON tasks (status) WHERE status IN ('needs_approval', 'awaiting_input');

CREATE TABLE sealed_entries (
    sha256                             TEXT    PRIMARY KEY,
    body                               TEXT    NOT NULL,
    byte_size                          INTEGER NOT NULL
);

CREATE TABLE sealed_requests (
    id                                 INTEGER PRIMARY KEY,
    task_id                            INTEGER NOT NULL REFERENCES tasks (id),
    generation_sealed                  INTEGER NOT NULL,
    parts                              TEXT    NOT NULL,
    sha256                             TEXT    NOT NULL,
    byte_size                          INTEGER NOT NULL,
    created_at                         INTEGER NOT NULL
);
CREATE INDEX sealed_requests_task ON sealed_requests (task_id);

CREATE TABLE idempotency_keys (
    id                                 INTEGER PRIMARY KEY,
    scope                              TEXT    NOT NULL,
    idem_key                           TEXT    NOT NULL,
    body                               TEXT    NOT NULL,
    result                             TEXT    NOT NULL,
    created_at                         INTEGER NOT NULL,
    UNIQUE (scope, idem_key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

-- +goose Down
DROP TABLE idempotency_keys;
DROP TABLE sealed_requests;
DROP TABLE sealed_entries;
DROP TABLE tasks;
DROP TABLE turns;
DROP TABLE runs;
DROP TABLE conversations;
