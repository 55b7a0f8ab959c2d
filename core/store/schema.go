package store

import (
	"context"
	"fmt"
	"sort"
)

// Column is one column of a table as the live database describes it.
type Column struct {
	Table    string
	Name     string
	Nullable bool
}

// gooseTable is the migration tool's own bookkeeping table, not part of the schema.
const gooseTable = "goose_db_version"

// Columns describes every table of the live schema (the migration table excluded), ordered by
// table then column name. The parity test compares the two dialects through it.
func (s *Store) Columns(ctx context.Context) ([]Column, error) {
	var cols []Column
	switch s.dialect {
	case SQLite:
		var tables []string
		if err := s.Reader().Select(ctx, &tables,
			`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> ?`, gooseTable); err != nil {
			return nil, err
		}
		for _, tbl := range tables {
			var rows []struct {
				Name    string `db:"name"`
				NotNull bool   `db:"notnull"`
				PK      int    `db:"pk"`
			}
			if err := s.Reader().Select(ctx, &rows, `SELECT name, "notnull", pk FROM pragma_table_info(?)`, tbl); err != nil {
				return nil, err
			}
			for _, r := range rows {
				// SQLite lets an INTEGER PRIMARY KEY be declared without NOT NULL; it can never
				// hold one.
				cols = append(cols, Column{Table: tbl, Name: r.Name, Nullable: !r.NotNull && r.PK == 0})
			}
		}
	case Postgres:
		var rows []struct {
			Table    string `db:"table_name"`
			Name     string `db:"column_name"`
			Nullable string `db:"is_nullable"`
		}
		if err := s.Reader().Select(ctx, &rows, `
SELECT table_name, column_name, is_nullable FROM information_schema.columns
WHERE table_schema = current_schema() AND table_name <> ?`, gooseTable); err != nil {
			return nil, err
		}
		for _, r := range rows {
			cols = append(cols, Column{Table: r.Table, Name: r.Name, Nullable: r.Nullable == "YES"})
		}
	default:
		return nil, fmt.Errorf("store: unknown dialect %q", s.dialect)
	}
	sort.Slice(cols, func(i, j int) bool {
		if cols[i].Table != cols[j].Table {
			return cols[i].Table < cols[j].Table
		}
		return cols[i].Name < cols[j].Name
	})
	return cols, nil
}
