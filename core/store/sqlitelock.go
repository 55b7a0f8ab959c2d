package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// SQLite serves one server process (docs/operations.md#stores): the process that serves a SQLite
// database, or migrates it, holds an exclusive lock (flock) on a file beside it, the database's
// own path with LockSuffix, released when the process ends however it ends. The lock names the
// database file itself, symbolic links resolved, so two data directories that name one file
// take one lock.
const LockSuffix = ".lock"

// ErrDatabaseInUse answers HoldSQLite when another process holds the database's lock.
var ErrDatabaseInUse = errors.New("store: the SQLite database is in use")

// InUseError is ErrDatabaseInUse with the database, its lock file and the holder's process id as
// the holder wrote it (0 when unreadable).
type InUseError struct {
	Database string
	LockFile string
	PID      int
}

func (e *InUseError) Error() string {
	holder := "another process"
	if e.PID > 0 {
		holder = "process " + strconv.Itoa(e.PID)
	}
	return fmt.Sprintf("the SQLite database %s is in use: %s holds its lock %s (a nexus serve or migrate on this file)", e.Database, holder, e.LockFile)
}

func (e *InUseError) Unwrap() error { return ErrDatabaseInUse }

// SQLiteLock is a held lock on a SQLite database.
type SQLiteLock struct {
	f *os.File
}

// Release drops the lock; the file stays, since removing a lock file races with a process
// opening it. A nil lock releases nothing.
func (l *SQLiteLock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// sqliteLockPath is the lock file of the SQLite database at path: the database file's real
// path (its directory's when the file does not exist yet) with LockSuffix.
func sqliteLockPath(path string) (db, lock string, err error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	} else if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		abs = filepath.Join(dir, filepath.Base(abs))
	}
	return abs, abs + LockSuffix, nil
}

// HoldSQLite takes the exclusive lock of the SQLite database named by rawURL, creating its
// directory and lock file when missing, and writes this process's id into it. Another holder
// answers an *InUseError and changes nothing. A PostgreSQL URL holds nothing (a nil lock):
// several instances may share PostgreSQL.
func HoldSQLite(rawURL string) (*SQLiteLock, error) { return holdSQLite(rawURL, true) }

func holdSQLite(rawURL string, writePID bool) (*SQLiteLock, error) {
	if IsPostgresURL(rawURL) {
		return nil, nil
	}
	db, lock, err := sqliteLockPath(SQLitePath(rawURL))
	if err != nil {
		return nil, fmt.Errorf("store: lock %s: %w", rawURL, err)
	}
	if err := os.MkdirAll(filepath.Dir(lock), 0o700); err != nil {
		return nil, fmt.Errorf("store: create %s: %w", filepath.Dir(lock), err)
	}
	f, err := os.OpenFile(lock, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", lock, err)
	}
	held, err := tryLock(f)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("store: lock %s: %w", lock, err)
	}
	if !held {
		_ = f.Close()
		return nil, &InUseError{Database: db, LockFile: lock, PID: holderPID(lock)}
	}
	// The holder's id, for the message another process prints; the lock is the flock, not this.
	if writePID {
		if err := f.Truncate(0); err == nil {
			_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		}
	}
	return &SQLiteLock{f: f}, nil
}

// SQLiteInUse reports whether another process holds the lock of the SQLite database named by
// rawURL now, with that error; a PostgreSQL URL, or a database nobody holds, answers nil. It
// writes nothing: it takes the lock for a moment only when nobody holds it.
func SQLiteInUse(rawURL string) error {
	if IsPostgresURL(rawURL) {
		return nil
	}
	_, lock, err := sqliteLockPath(SQLitePath(rawURL))
	if err != nil {
		return nil
	}
	if _, err := os.Stat(lock); err != nil {
		return nil
	}
	l, err := holdSQLite(rawURL, false)
	if err != nil {
		if errors.Is(err, ErrDatabaseInUse) {
			return err
		}
		return nil
	}
	return l.Release()
}

// holderPID reads the process id a holder wrote, 0 when there is none.
func holderPID(lock string) int {
	data, err := os.ReadFile(lock)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid < 1 {
		return 0
	}
	return pid
}
