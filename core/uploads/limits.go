package uploads

import "time"

// Bounds of an upload (docs/api.md#limits).
const (
	// MaxBytes bounds one upload at 100 MiB: large enough for any capture or document a model
	// reads as an attachment, small enough that the store holds many without a blob service.
	MaxBytes = 104_857_600
	// ChunkSize is the unit of storage: each chunk is one row written in its own short
	// transaction and the most an upload holds in memory at once, so a slow client never holds
	// SQLite's one writer for long and a 100 MiB file never sits in memory whole.
	ChunkSize = 1 << 20
	// SniffBytes is how much of the head the content sniffer reads: the standard library's
	// sniffer considers at most the first 512 bytes.
	SniffBytes = 512
	// MaxFilenameBytes bounds a kept filename: the common file-system limit on a name.
	MaxFilenameBytes = 255
	// UnboundLifetime is how long an upload nothing binds is kept: a day covers a runner that
	// stages a capture and commits within any tool's park (7 days is only the announced ceiling;
	// the default park is 10 minutes).
	UnboundLifetime = 24 * time.Hour
	// ReclaimBatch bounds the uploads one reclamation transaction deletes (800 MiB of chunks
	// at most), so that a sweeper pass never holds SQLite's one writer for long.
	ReclaimBatch = 8
)

// DefaultFilename is the name kept when a part's filename is empty after cleaning.
const DefaultFilename = "upload"

// discardTimeout bounds the clean-up of a refused or interrupted upload, which runs after the
// request's own context may already be done; what it cannot delete the sweeper reclaims.
const discardTimeout = 30 * time.Second
