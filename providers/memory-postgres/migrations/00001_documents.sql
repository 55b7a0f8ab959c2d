CREATE TABLE {{schema}}.anchors (
  scope_kind text    NOT NULL CHECK (scope_kind IN ('conversation', 'workspace', 'user')),
  owner_id   uuid    NOT NULL,
  doc_count  integer NOT NULL DEFAULT 0 CHECK (doc_count BETWEEN 0 AND 64),
  PRIMARY KEY (scope_kind, owner_id)
);

CREATE TABLE {{schema}}.documents (
  scope_kind text        NOT NULL,
  owner_id   uuid        NOT NULL,
  name       text COLLATE "C" NOT NULL,
  content    text        NOT NULL,
  size_bytes integer     NOT NULL CHECK (size_bytes BETWEEN 0 AND 65536),
  version    bigint      NOT NULL CHECK (version >= 1),
  written_at timestamptz NOT NULL,
  PRIMARY KEY (scope_kind, owner_id, name),
  FOREIGN KEY (scope_kind, owner_id) REFERENCES {{schema}}.anchors ON DELETE CASCADE
);
