package store_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/nexuskernel/nexus/core/store"
)

// TestHoldSQLite: one holder per database file: a second hold, through the same path or a symbolic
// link to the file's directory, is ErrDatabaseInUse naming the holder's process and the lock; the
// probe says the same and writes nothing; a release frees the database; PostgreSQL holds nothing.
func TestHoldSQLite(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	db := filepath.Join(dir, "nexus.db")
	if err := store.SQLiteInUse(db); err != nil {
		t.Fatalf("probe of a database never held: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the probe made the directory: %v", err)
	}
	l, err := store.HoldSQLite(db)
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{db, "sqlite://" + db, filepath.Join(link, "nexus.db")} {
		_, err := store.HoldSQLite(path)
		var in *store.InUseError
		if !errors.As(err, &in) || !errors.Is(err, store.ErrDatabaseInUse) || in.PID != os.Getpid() ||
			in.LockFile != filepath.Join(real, "nexus.db.lock") || in.Database != filepath.Join(real, "nexus.db") {
			t.Fatalf("second hold through %s: %v (%+v)", path, err, in)
		}
		if err := store.SQLiteInUse(path); !errors.Is(err, store.ErrDatabaseInUse) {
			t.Fatalf("probe through %s: %v", path, err)
		}
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := store.SQLiteInUse(db); err != nil {
		t.Fatalf("probe after the release: %v", err)
	}
	again, err := store.HoldSQLite(db)
	if err != nil {
		t.Fatalf("hold after the release: %v", err)
	}
	_ = again.Release()
	if pg, err := store.HoldSQLite("postgres://u@h/db"); pg != nil || err != nil {
		t.Fatalf("PostgreSQL: %v %v", pg, err)
	}
}
