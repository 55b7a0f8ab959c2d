-- +goose Up
-- A plugin's managed executor (docs/plugins.md#what-the-host-checks): managed_by is its catalog
-- name, one row per workspace it serves, found again by (workspace, catalog name) so its public id
-- is stable across restarts, reloads and upgrades. managed_eligible is 0 while the catalog's
-- workspaces exclude the row's workspace (docs/api.md#the-memory-override not_eligible).
ALTER TABLE executors ADD COLUMN managed_by TEXT;
ALTER TABLE executors ADD COLUMN managed_eligible INTEGER NOT NULL DEFAULT 1;
CREATE UNIQUE INDEX executors_managed ON executors (workspace_id, managed_by) WHERE managed_by IS NOT NULL;

-- A workspace's tool provider override map (docs/api.md#the-memory-override): the canonical JSON
-- object and its lock version; a workspace without a row has the empty map at lock version 0.
CREATE TABLE workspace_tool_provider_overrides (
    workspace_id INTEGER PRIMARY KEY REFERENCES workspaces (id),
    overrides    TEXT    NOT NULL,
    lock_version INTEGER NOT NULL CHECK (lock_version >= 0)
);

-- +goose Down
DROP TABLE workspace_tool_provider_overrides;
DROP INDEX executors_managed;
ALTER TABLE executors DROP COLUMN managed_eligible;
ALTER TABLE executors DROP COLUMN managed_by;
