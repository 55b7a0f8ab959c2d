-- +goose Up
-- An anchor is the owner of a set of memory documents: a conversation, a workspace or a user,
-- named by kind and public id. Owners live in other tables (or are not rows at all for a store
-- test), so there is no foreign key: the anchor row exists to be locked (SELECT … FOR UPDATE),
-- serializing every mutation of its documents.
CREATE TABLE memory_anchors (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    scope_kind      TEXT   NOT NULL CHECK (scope_kind IN ('conversation', 'workspace', 'user')),
    owner_public_id UUID   NOT NULL,
    UNIQUE (scope_kind, owner_public_id)
);

-- Names compare and sort byte for byte (COLLATE "C"), as in SQLite. written_at_us is Unix
-- microseconds, not milliseconds: a memory store answers the write time to the microsecond it
-- was sent. description is set on skill documents only.
CREATE TABLE memory_documents (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id     UUID   NOT NULL UNIQUE,
    anchor_id     BIGINT NOT NULL REFERENCES memory_anchors (id),
    name          TEXT   COLLATE "C" NOT NULL,
    description   TEXT,
    content       TEXT   NOT NULL,
    bytesize      BIGINT NOT NULL CHECK (bytesize >= 0),
    lock_version  BIGINT NOT NULL CHECK (lock_version >= 1),
    written_at_us BIGINT NOT NULL,
    UNIQUE (anchor_id, name)
);

-- +goose Down
DROP TABLE memory_documents;
DROP TABLE memory_anchors;
