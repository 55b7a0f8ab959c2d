-- +goose Up
-- The instances serving this store (docs/operations.md#several-instances): each registers at start
-- and renews heartbeat_at; a survivor that finds a heartbeat older than the timeout marks dead_at
-- and releases the kernel claims that instance held.
CREATE TABLE instances (
    id           TEXT    PRIMARY KEY,
    host         TEXT    NOT NULL,
    version      TEXT    NOT NULL,
    started_at   BIGINT  NOT NULL,
    heartbeat_at BIGINT  NOT NULL,
    dead_at      BIGINT
);

-- The instance of the row's last kernel claim, NULL for an executor's; it means something only while
-- claimed_at is set. The index holds the live claimed rows only (the terms of the takeover's query,
-- store.OrphanedClaims), so that a sweep never reads the settled history.
ALTER TABLE tasks ADD COLUMN claimed_instance TEXT;
CREATE INDEX tasks_claimed_instance ON tasks (claimed_instance)
    WHERE claimed_at IS NOT NULL AND claimed_instance IS NOT NULL
      AND status IN ('running', 'dispatched', 'awaiting_input', 'needs_approval');

-- +goose Down
DROP INDEX tasks_claimed_instance;
ALTER TABLE tasks DROP COLUMN claimed_instance;
DROP TABLE instances;
