-- +goose Up
-- An anchor is the owner of a set of memory documents: a conversation, a workspace or a user,
-- named by kind and public id. Owners live in other tables (or are not rows at all for a store
-- test), so there is no foreign key: the anchor row exists to be locked, serializing every
-- mutation of its documents.
CREATE TABLE memory_anchors (
    id              INTEGER PRIMARY KEY,
    scope_kind      TEXT    NOT NULL CHECK (scope_kind IN ('conversation', 'workspace', 'user')),
    owner_public_id TEXT    NOT NULL,
    UNIQUE (scope_kind, owner_public_id)
);

-- Names compare byte for byte (SQLite's BINARY collation). written_at_us is Unix microseconds,
-- not milliseconds: a memory store answers the write time to the microsecond it was sent.
-- description is set on skill documents only.
CREATE TABLE memory_documents (
    id            INTEGER PRIMARY KEY,
    public_id     TEXT    NOT NULL UNIQUE,
    anchor_id     INTEGER NOT NULL REFERENCES memory_anchors (id),
    name          TEXT    NOT NULL,
    description   TEXT,
    content       TEXT    NOT NULL,
    bytesize      INTEGER NOT NULL CHECK (bytesize >= 0),
    lock_version  INTEGER NOT NULL CHECK (lock_version >= 1),
    written_at_us INTEGER NOT NULL,
    UNIQUE (anchor_id, name)
);

-- +goose Down
DROP TABLE memory_documents;
DROP TABLE memory_anchors;
