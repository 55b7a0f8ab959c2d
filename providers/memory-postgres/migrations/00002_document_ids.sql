-- Protocol 1.3: every document has an id from its creation to its deletion. Rows written before
-- it have none until their next write.
ALTER TABLE {{schema}}.documents ADD COLUMN id uuid;
