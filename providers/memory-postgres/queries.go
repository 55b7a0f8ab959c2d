package memorypostgres

// queries holds the store's SQL with the schema spliced in once (the schema name is checked
// against a plain-identifier grammar, so no quoting is needed).
type queries struct {
	upsertAnchor, lockAnchor, bumpCount       string
	readDoc, docVersion, insertDoc, updateDoc string
	lockDoc, deleteDoc, ls, grep              string
}

func newQueries(schema string) queries {
	anchors, docs := schema+".anchors", schema+".documents"
	return queries{
		upsertAnchor: `INSERT INTO ` + anchors + ` (scope_kind, owner_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
		lockAnchor:   `SELECT doc_count FROM ` + anchors + ` WHERE scope_kind = $1 AND owner_id = $2 FOR UPDATE`,
		bumpCount:    `UPDATE ` + anchors + ` SET doc_count = doc_count + $3 WHERE scope_kind = $1 AND owner_id = $2`,
		readDoc:      `SELECT name, content, size_bytes, written_at, version, COALESCE(id::text, '') AS id FROM ` + docs + ` WHERE scope_kind = $1 AND owner_id = $2 AND name = $3`,
		docVersion:   `SELECT version, COALESCE(id::text, '') AS id FROM ` + docs + ` WHERE scope_kind = $1 AND owner_id = $2 AND name = $3`,
		insertDoc: `INSERT INTO ` + docs + ` (scope_kind, owner_id, name, content, size_bytes, version, written_at, id)
			VALUES ($1, $2, $3, $4, $5, 1, $6, $7)`,
		updateDoc: `UPDATE ` + docs + ` SET content = $4, size_bytes = $5, version = version + 1, written_at = $6, id = $8
			WHERE scope_kind = $1 AND owner_id = $2 AND name = $3 AND version = $7 RETURNING version`,
		lockDoc:   `SELECT content, version, COALESCE(id::text, '') AS id FROM ` + docs + ` WHERE scope_kind = $1 AND owner_id = $2 AND name = $3 FOR UPDATE`,
		deleteDoc: `DELETE FROM ` + docs + ` WHERE scope_kind = $1 AND owner_id = $2 AND name = $3 RETURNING version`,
		ls: `SELECT name, size_bytes, written_at, version, COALESCE(id::text, '') AS id FROM ` + docs + `
			WHERE scope_kind = $1 AND owner_id = $2 AND name LIKE $3 ESCAPE '\' ORDER BY name`,
		grep: `SELECT name, content FROM ` + docs + `
			WHERE scope_kind = $1 AND owner_id = $2 AND name LIKE $3 ESCAPE '\' ORDER BY name`,
	}
}
