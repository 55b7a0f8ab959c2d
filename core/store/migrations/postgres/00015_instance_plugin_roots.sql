-- +goose Up
-- Where each live instance's copy of a plugin keeps its data, for the plugins whose storage the
-- host can name (memory-fs: the marker of its root), so that instances serving one catalog name
-- from different roots are caught (docs/operations.md#several-instances). serving is true for the
-- instance whose root was admitted, false for one held unready because another root is in use.
-- A row lives while its instance does: a live instance is one of the instances table's, and the
-- sweep that forgets a dead instance forgets its rows.
CREATE TABLE instance_plugin_roots (
    instance_id TEXT    NOT NULL,
    plugin      TEXT    NOT NULL,
    root_id     TEXT    NOT NULL,
    root_path   TEXT    NOT NULL,
    serving     BOOLEAN NOT NULL,
    recorded_at BIGINT  NOT NULL,
    PRIMARY KEY (instance_id, plugin)
);

-- +goose Down
DROP TABLE instance_plugin_roots;
