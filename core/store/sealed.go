package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lib/pq"
)

// SealedParts is a sealed request split for storage (docs/development.md#how-the-kernel-runs-work):
// the bytes are Prefix, then Entries joined by commas, then Suffix. Each piece is stored once in
// sealed_entries, addressed by the SHA-256 of its bytes, so a conversation whose every round
// repeats the rounds before it stores each entry once and grows linearly.
type SealedParts struct {
	Prefix  []byte
	Entries [][]byte
	Suffix  []byte
	// BaseID names an earlier sealed request whose first BaseCount entries this one repeats (a
	// continuation repeats its predecessor's whole request); 0 for none. The index then lists
	// only the entries after them, so a lineage's index grows linearly too.
	BaseID    int64
	BaseCount int
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
	Prefix    string   `json:"prefix"`
	Base      int64    `json:"base,omitempty"`
	BaseCount int      `json:"base_count,omitempty"`
	Entries   []string `json:"entries"`
	Suffix    string   `json:"suffix"`
}

func hexSum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// insertSealedSQL writes a sealed request's index row; putSealed answers its arguments.
const insertSealedSQL = `INSERT INTO sealed_requests (task_id, generation_sealed, parts, sha256, byte_size, created_at) VALUES (?, ?, ?, ?, ?, ?)`

// putSealed stores a sealed request's pieces and answers the arguments of its index row and the
// size of its whole bytes.
func putSealed(ctx context.Context, q Querier, taskID, generation int64, p SealedParts, at int64) ([]any, int64, error) {
	idx := sealedIndex{Prefix: hexSum(p.Prefix), Suffix: hexSum(p.Suffix), Base: p.BaseID, BaseCount: p.BaseCount}
	if p.BaseID == 0 {
		idx.BaseCount = 0
	}
	put := func(b []byte) (string, error) {
		h := hexSum(b)
		_, err := q.Exec(ctx, `INSERT INTO sealed_entries (sha256, body, byte_size) VALUES (?, ?, ?) ON CONFLICT (sha256) DO NOTHING`, h, string(b), len(b))
		return h, err
	}
	if _, err := put(p.Prefix); err != nil {
		return nil, 0, fmt.Errorf("store: seal: %w", err)
	}
	if _, err := put(p.Suffix); err != nil {
		return nil, 0, fmt.Errorf("store: seal: %w", err)
	}
	for _, e := range p.Entries[idx.BaseCount:] {
		h, err := put(e)
		if err != nil {
			return nil, 0, fmt.Errorf("store: seal: %w", err)
		}
		idx.Entries = append(idx.Entries, h)
	}
	whole := p.Bytes()
	parts, err := json.Marshal(idx)
	if err != nil {
		return nil, 0, err
	}
	return []any{taskID, generation, string(parts), hexSum(whole), len(whole), at}, int64(len(whole)), nil
}

// Delivered names the rows whose results a sealed request carries for the first time: Seal
// marks them delivered (result_delivered_at, delivered_with) with the seal.
type Delivered struct {
	IDs []int64
	// With is the sealing round's key, stored as delivered_with.
	With string
}

// Seal stores a round's sealed request and points the round at it (sealed_request_id,
// request_bytes, and history_entries, the count of history entries it carries) under its guards,
// and marks the rows whose results it delivers (docs/development.md#how-the-kernel-runs-work).
type Seal struct {
	// ID is the round; Generation the claim generation it is sealed under (generation_sealed).
	ID, Generation int64
	Parts          SealedParts
	At             int64
	HistoryEntries int64
	Delivered      Delivered
	// From and Claim guard the round's update: its status and its claim; "" and nil for none.
	From  string
	Claim *Fence
}

// Exec stores the request and answers its id and whether the guards held. On PostgreSQL the index
// row, the marks and the round's update are one statement (after the pieces' inserts); a guard
// that no longer holds leaves the index row and the marks written, for the caller's rollback.
func (s Seal) Exec(ctx context.Context, q Querier) (id int64, ok bool, err error) {
	args, size, err := putSealed(ctx, q, s.ID, s.Generation, s.Parts, s.At)
	if err != nil {
		return 0, false, err
	}
	g := guard{from: s.From, claim: s.Claim}
	if q.Dialect() != Postgres {
		if err := q.Get(ctx, &id, insertSealedSQL+` RETURNING id`, args...); err != nil {
			return 0, false, fmt.Errorf("store: seal: %w", err)
		}
		var b strings.Builder
		b.WriteString(`UPDATE tasks SET sealed_request_id = ?, request_bytes = ?, history_entries = ?`)
		update := g.where(&b, []any{id, size, s.HistoryEntries}, s.ID)
		if ok, err = exec(ctx, q, "seal", s.ID, b.String(), update); err != nil || !ok {
			return id, ok, err
		}
		for _, d := range s.Delivered.IDs {
			if d == s.ID {
				continue // the sealed row is not one it delivers, as on PostgreSQL
			}
			if err := (Deliver{ID: d, With: s.Delivered.With, At: s.At}).Exec(ctx, q); err != nil {
				return 0, false, err
			}
		}
		return id, true, nil
	}
	with := `WITH sealed AS (` + insertSealedSQL + ` RETURNING id)`
	if len(s.Delivered.IDs) > 0 {
		// Other rows than the sealed one: one statement updates each row once.
		with += `, delivered AS (UPDATE tasks SET result_delivered_at = ?, delivered_with = ? WHERE id = ANY(?::bigint[]) AND id <> ?)`
		args = append(args, s.At, s.Delivered.With, pq.Array(s.Delivered.IDs), s.ID)
	}
	var b strings.Builder
	b.WriteString(with + ` UPDATE tasks SET sealed_request_id = (SELECT id FROM sealed), request_bytes = ?, history_entries = ?`)
	args = g.where(&b, append(args, size, s.HistoryEntries), s.ID)
	err = notFound(q.Get(ctx, &id, b.String()+` RETURNING sealed_request_id`, args...))
	if err == ErrNotFound {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("store: seal task %d: %w", s.ID, err)
	}
	return id, true, nil
}

// SealedRequest reassembles a stored sealed request, following its base chain; it checks the
// result against the stored SHA-256, so a damaged piece is an error rather than different bytes
// served.
func SealedRequest(ctx context.Context, q Querier, id int64) (SealedParts, error) {
	var top sealedHead
	if err := q.Get(ctx, &top, `SELECT parts AS sealed_parts, sha256 AS sealed_sha256 FROM sealed_requests WHERE id = ?`, id); err != nil {
		return SealedParts{}, notFound(err)
	}
	return sealedFrom(ctx, q, id, top)
}

// sealedHead is a sealed request's index row: the index (sealedIndex, JSON) and the SHA-256 of
// the whole request.
type sealedHead struct {
	Parts  *string `db:"sealed_parts"`
	SHA256 *string `db:"sealed_sha256"`
}

// maxSealedChain bounds the bases one request's chain may follow: a lineage's rounds, each the
// base of the next, are bounded far below it, so a longer chain is damage (a cycle), answered as
// an error rather than followed.
const maxSealedChain = 4096

// sealedChainSQL reads the index rows of a request's bases, nearest first, following each row's
// base (sealedIndex.Base, 0 or absent at the root) in one recursive statement, at most
// maxSealedChain of them.
func sealedChainSQL(d Dialect) string {
	base := `COALESCE(CAST(json_extract(c.parts, '$.base') AS INTEGER), 0)`
	if d == Postgres {
		base = `COALESCE(CAST(CAST(c.parts AS jsonb) ->> 'base' AS BIGINT), 0)`
	}
	return `WITH RECURSIVE chain(id, parts, depth) AS (
  SELECT id, parts, 1 FROM sealed_requests WHERE id = ?
  UNION ALL
  SELECT s.id, s.parts, c.depth + 1 FROM chain c JOIN sealed_requests s ON s.id = ` + base + `
  WHERE c.depth < ?)
SELECT parts FROM chain ORDER BY depth`
}

// sealedFrom is SealedRequest from the request's index row, read by the caller.
func sealedFrom(ctx context.Context, q Querier, id int64, top sealedHead) (SealedParts, error) {
	if top.Parts == nil || top.SHA256 == nil {
		return SealedParts{}, fmt.Errorf("store: sealed request %d: %w", id, ErrNotFound)
	}
	var idx sealedIndex
	if err := json.Unmarshal([]byte(*top.Parts), &idx); err != nil {
		return SealedParts{}, fmt.Errorf("store: sealed request %d: %w", id, err)
	}
	chain := []sealedIndex{idx}
	if idx.Base != 0 {
		// The bases, nearest first, in one statement however long the lineage.
		var bases []string
		if err := q.Select(ctx, &bases, sealedChainSQL(q.Dialect()), idx.Base, maxSealedChain); err != nil {
			return SealedParts{}, fmt.Errorf("store: sealed request %d: bases: %w", id, err)
		}
		want := idx.Base
		for _, b := range bases {
			var level sealedIndex
			if err := json.Unmarshal([]byte(b), &level); err != nil {
				return SealedParts{}, fmt.Errorf("store: sealed request %d: base %d: %w", id, want, err)
			}
			chain = append(chain, level)
			want = level.Base
		}
		if want != 0 {
			return SealedParts{}, fmt.Errorf("store: sealed request %d: base %d: %w", id, want, ErrNotFound)
		}
	}
	// Entry hashes in order: from the root of the chain outwards, each level keeping its
	// base_count entries of the level below.
	var hashes []string
	for i := len(chain) - 1; i >= 0; i-- {
		if c := chain[i].BaseCount; c <= len(hashes) {
			hashes = hashes[:c]
		}
		hashes = append(hashes, chain[i].Entries...)
	}
	top0 := chain[0]
	uniq := map[string]bool{}
	args := []any{}
	for _, h := range append([]string{top0.Prefix, top0.Suffix}, hashes...) {
		if !uniq[h] {
			uniq[h] = true
			args = append(args, h)
		}
	}
	by := make(map[string][]byte, len(args))
	const batch = 500 // bounded IN lists keep every query under both dialects' parameter limits
	for start := 0; start < len(args); start += batch {
		end := min(start+batch, len(args))
		var bodies []struct {
			SHA256 string `db:"sha256"`
			Body   string `db:"body"`
		}
		if err := q.Select(ctx, &bodies, `SELECT sha256, body FROM sealed_entries WHERE sha256 IN (`+placeholders(end-start)+`)`, args[start:end]...); err != nil {
			return SealedParts{}, err
		}
		for _, b := range bodies {
			by[b.SHA256] = []byte(b.Body)
		}
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
	if p.Prefix, err = get(top0.Prefix); err != nil {
		return SealedParts{}, err
	}
	if p.Suffix, err = get(top0.Suffix); err != nil {
		return SealedParts{}, err
	}
	p.Entries = make([][]byte, len(hashes))
	for i, h := range hashes {
		if p.Entries[i], err = get(h); err != nil {
			return SealedParts{}, err
		}
	}
	if hexSum(p.Bytes()) != *top.SHA256 {
		return SealedParts{}, fmt.Errorf("store: sealed request %d: reassembled bytes do not match their SHA-256", id)
	}
	return p, nil
}

// SealedStorage reports the bytes stored for sealed requests: the distinct pieces and the index
// rows (the sealed storage test compares it with one request's size;
// docs/development.md#how-the-kernel-runs-work).
func SealedStorage(ctx context.Context, q Querier) (int64, error) {
	var n struct {
		Entries int64 `db:"e"`
		Index   int64 `db:"i"`
	}
	err := q.Get(ctx, &n, `SELECT (SELECT COALESCE(SUM(byte_size), 0) FROM sealed_entries) AS e,
  (SELECT COALESCE(SUM(LENGTH(parts)), 0) FROM sealed_requests) AS i`)
	return n.Entries + n.Index, err
}
