package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// SealedParts is a sealed request split for storage (runs.md §5.1 "Storage"): the bytes are
// Prefix, then Entries joined by commas, then Suffix. Each piece is stored once in
// sealed_entries, addressed by the SHA-256 of its bytes, so a conversation whose every round
// repeats the rounds before it stores each entry once and grows linearly.
type SealedParts struct {
	Prefix  []byte
	Entries [][]byte
	Suffix  []byte
}

// Bytes reassembles the sealed request.
func (p SealedParts) Bytes() []byte {
	n := len(p.Prefix) + len(p.Suffix) + len(p.Entries)
	for _, e := range p.Entries {
		n += len(e)
	}
	out := make([]byte, 0, n)
	out = append(out, p.Prefix...)
	for i, e := range p.Entries {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, e...)
	}
	return append(out, p.Suffix...)
}

type sealedIndex struct {
	Prefix  string   `json:"prefix"`
	Entries []string `json:"entries"`
	Suffix  string   `json:"suffix"`
}

func hexSum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// InsertSealed stores a sealed request for a task and returns its id, the SHA-256 and the size
// of its whole bytes.
func InsertSealed(ctx context.Context, q Querier, taskID, generation int64, p SealedParts, at int64) (id int64, size int64, err error) {
	idx := sealedIndex{Prefix: hexSum(p.Prefix), Suffix: hexSum(p.Suffix), Entries: make([]string, len(p.Entries))}
	put := func(b []byte) (string, error) {
		h := hexSum(b)
		_, err := q.Exec(ctx, `INSERT INTO sealed_entries (sha256, body, byte_size) VALUES (?, ?, ?) ON CONFLICT (sha256) DO NOTHING`, h, string(b), len(b))
		return h, err
	}
	if _, err := put(p.Prefix); err != nil {
		return 0, 0, fmt.Errorf("store: seal: %w", err)
	}
	if _, err := put(p.Suffix); err != nil {
		return 0, 0, fmt.Errorf("store: seal: %w", err)
	}
	for i, e := range p.Entries {
		h, err := put(e)
		if err != nil {
			return 0, 0, fmt.Errorf("store: seal: %w", err)
		}
		idx.Entries[i] = h
	}
	whole := p.Bytes()
	parts, err := json.Marshal(idx)
	if err != nil {
		return 0, 0, err
	}
	err = q.Get(ctx, &id, `INSERT INTO sealed_requests (task_id, generation_sealed, parts, sha256, byte_size, created_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING id`,
		taskID, generation, string(parts), hexSum(whole), len(whole), at)
	if err != nil {
		return 0, 0, fmt.Errorf("store: seal: %w", err)
	}
	return id, int64(len(whole)), nil
}

// SealedRequest reassembles a stored sealed request; it checks the result against the stored
// SHA-256, so a damaged piece is an error rather than different bytes served.
func SealedRequest(ctx context.Context, q Querier, id int64) (SealedParts, error) {
	var row struct {
		Parts  string `db:"parts"`
		SHA256 string `db:"sha256"`
	}
	if err := q.Get(ctx, &row, `SELECT parts, sha256 FROM sealed_requests WHERE id = ?`, id); err != nil {
		return SealedParts{}, notFound(err)
	}
	var idx sealedIndex
	if err := json.Unmarshal([]byte(row.Parts), &idx); err != nil {
		return SealedParts{}, fmt.Errorf("store: sealed request %d: %w", id, err)
	}
	hashes := append([]string{idx.Prefix, idx.Suffix}, idx.Entries...)
	uniq := map[string]bool{}
	args := []any{}
	for _, h := range hashes {
		if !uniq[h] {
			uniq[h] = true
			args = append(args, h)
		}
	}
	var bodies []struct {
		SHA256 string `db:"sha256"`
		Body   string `db:"body"`
	}
	if err := q.Select(ctx, &bodies, `SELECT sha256, body FROM sealed_entries WHERE sha256 IN (`+placeholders(len(args))+`)`, args...); err != nil {
		return SealedParts{}, err
	}
	by := make(map[string][]byte, len(bodies))
	for _, b := range bodies {
		by[b.SHA256] = []byte(b.Body)
	}
	get := func(h string) ([]byte, error) {
		b, ok := by[h]
		if !ok {
			return nil, fmt.Errorf("store: sealed request %d: entry %s missing", id, h)
		}
		return b, nil
	}
	var p SealedParts
	var err error
	if p.Prefix, err = get(idx.Prefix); err != nil {
		return SealedParts{}, err
	}
	if p.Suffix, err = get(idx.Suffix); err != nil {
		return SealedParts{}, err
	}
	p.Entries = make([][]byte, len(idx.Entries))
	for i, h := range idx.Entries {
		if p.Entries[i], err = get(h); err != nil {
			return SealedParts{}, err
		}
	}
	if hexSum(p.Bytes()) != row.SHA256 {
		return SealedParts{}, fmt.Errorf("store: sealed request %d: reassembled bytes do not match their SHA-256", id)
	}
	return p, nil
}

// SealedStorage reports the bytes stored for sealed requests: the distinct pieces and the
// index rows (the §5.1 storage test compares it with one request's size).
func SealedStorage(ctx context.Context, q Querier) (int64, error) {
	var n struct {
		Entries int64 `db:"e"`
		Index   int64 `db:"i"`
	}
	err := q.Get(ctx, &n, `SELECT (SELECT COALESCE(SUM(byte_size), 0) FROM sealed_entries) AS e,
  (SELECT COALESCE(SUM(LENGTH(parts)), 0) FROM sealed_requests) AS i`)
	return n.Entries + n.Index, err
}
