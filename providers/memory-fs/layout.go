package memoryfs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nexuskernel/nexus/sdk/memory"
)

// On-disk layout (docs/plugins.md):
//
//	<root>/FORMAT                              formatLine
//	<root>/ROOT_ID                             the root's marker (RootIDFile), written once
//	<root>/anchors/<kind>/<owner id>/          one directory per anchor
//	    .lock                                  flock target for mutations
//	    <sha256-hex(name)>.doc                 header line of JSON, then the content bytes
//	    .tmp-<random>                          writes in progress
//
// Owner ids are canonical lowercase UUIDs and kinds a closed set, so no input can reach
// outside the root; document names never appear in paths.
const (
	formatFile   = "FORMAT"
	formatLine   = "nexus-memory-fs 1\n"
	anchorsDir   = "anchors"
	lockFileName = ".lock"
	docSuffix    = ".doc"
	tempPrefix   = ".tmp-"

	// headerFormat is the "format" number every document header carries.
	headerFormat = 1

	// maxHeaderBytes bounds a header line: a 255-byte name escaped as JSON (at most 6 bytes per
	// 3-byte character for U+2028-style escapes, 2 per byte for quotes) plus the fixed fields
	// stays well under 2 KiB, so 4 KiB leaves room without letting a corrupt file run long.
	maxHeaderBytes = 4096

	// maxFileBytes is the largest well-formed document file.
	maxFileBytes = maxHeaderBytes + memory.MaxDocumentBytes

	// writtenAtLayout keeps microseconds always, so headers have one fixed shape.
	writtenAtLayout = "2006-01-02T15:04:05.000000Z"

	// dirMode and fileMode keep memory private to the user running the store.
	dirMode  = 0o700
	fileMode = 0o600
)

// anchorKinds are the directory names under anchors/, one per scope kind.
var anchorKinds = []memory.ScopeKind{memory.ScopeConversation, memory.ScopeWorkspace, memory.ScopeUser}

// header is a document file's first line. Field order is the serialized order.
type header struct {
	Format    int    `json:"format"`
	Name      string `json:"name"`
	SizeBytes int64  `json:"size_bytes"`
	Version   uint64 `json:"version"`
	WrittenAt string `json:"written_at"`
	// ID is the document's id (protocol 1.3); absent in a document written before ids were
	// kept, until its next write.
	ID string `json:"id,omitempty"`
}

func (s *Store) anchorDir(scope memory.Scope) string {
	return filepath.Join(s.root, anchorsDir, string(scope.Kind), scope.OwnerID)
}

// docFileName is the file a name is stored in: the hex SHA-256 of the name, so any byte string
// a name may hold maps to a fixed-length, filesystem-safe file name.
func docFileName(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:]) + docSuffix
}

// isDocFileName reports whether a directory entry is a document file.
func isDocFileName(name string) bool {
	stem, ok := strings.CutSuffix(name, docSuffix)
	if !ok || len(stem) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(stem); i++ {
		if c := stem[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// encodeDoc renders a whole document file: its header line, then the content.
func encodeDoc(e memory.Entry, content string) []byte {
	h := header{
		Format:    headerFormat,
		Name:      e.Name,
		SizeBytes: e.SizeBytes,
		Version:   e.Version,
		WrittenAt: e.WrittenAt.UTC().Format(writtenAtLayout),
		ID:        e.ID,
	}
	var buf bytes.Buffer
	buf.Grow(len(content) + len(e.Name) + 128)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(h) // a struct of strings and numbers always encodes; Encode ends the line
	buf.WriteString(content)
	return buf.Bytes()
}

// decodeDoc splits a document file into its entry and content, checking the header against
// the file's name and the content's length. fileName is the base name, for the hash check.
// With headerOnly the data may stop after the header line. The content aliases data.
func decodeDoc(fileName string, data []byte, headerOnly bool) (memory.Entry, []byte, error) {
	nl := bytes.IndexByte(data, '\n')
	if nl < 0 || nl > maxHeaderBytes {
		return memory.Entry{}, nil, corrupt(fileName, "no header line")
	}
	h, ok := parseHeaderFast(data[:nl])
	if !ok {
		if err := json.Unmarshal(data[:nl], &h); err != nil {
			return memory.Entry{}, nil, corrupt(fileName, "header: "+err.Error())
		}
	}
	if h.Format != headerFormat {
		return memory.Entry{}, nil, corrupt(fileName, fmt.Sprintf("header format %d", h.Format))
	}
	if docFileName(h.Name) != fileName {
		return memory.Entry{}, nil, corrupt(fileName, "header names another document")
	}
	at, err := time.Parse(time.RFC3339Nano, h.WrittenAt)
	if err != nil {
		return memory.Entry{}, nil, corrupt(fileName, "written_at: "+err.Error())
	}
	if h.SizeBytes < 0 || h.SizeBytes > memory.MaxDocumentBytes || h.Version == 0 {
		return memory.Entry{}, nil, corrupt(fileName, "header size or version out of range")
	}
	e := memory.Entry{Name: h.Name, SizeBytes: h.SizeBytes, WrittenAt: at.UTC(), Version: h.Version, ID: h.ID}
	if headerOnly {
		return e, nil, nil
	}
	body := data[nl+1:]
	if int64(len(body)) != h.SizeBytes {
		return memory.Entry{}, nil, corrupt(fileName, fmt.Sprintf("content of %d bytes, header says %d", len(body), h.SizeBytes))
	}
	return e, body, nil
}

func corrupt(fileName, reason string) error {
	return fmt.Errorf("%w: memoryfs: document file %s is corrupt: %s", memory.ErrUnavailable, fileName, reason)
}

// Header pieces in the order encodeDoc writes them.
const (
	headerStart     = `{"format":1,"name":"`
	headerSize      = `,"size_bytes":`
	headerVersion   = `,"version":`
	headerWrittenAt = `,"written_at":"`
	headerID        = `","id":"`
	headerEnd       = `"}`
)

// parseHeaderFast reads a header in exactly the shape encodeDoc writes when the name needs no
// JSON escape, which is nearly every name; ok is false for anything else, and the caller falls
// back to encoding/json. Reading headers is most of the work of a listing or a search, and this
// path skips reflection.
func parseHeaderFast(line []byte) (h header, ok bool) {
	rest, found := bytes.CutPrefix(line, []byte(headerStart))
	if !found {
		return header{}, false
	}
	q := bytes.IndexByte(rest, '"')
	if q < 0 || !plainJSONString(rest[:q]) {
		return header{}, false
	}
	h.Format, h.Name, rest = headerFormat, string(rest[:q]), rest[q+1:]
	var size uint64
	if size, rest, ok = cutNumber(rest, headerSize); !ok {
		return header{}, false
	}
	if h.Version, rest, ok = cutNumber(rest, headerVersion); !ok {
		return header{}, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(headerWrittenAt)); !ok {
		return header{}, false
	}
	q = bytes.IndexByte(rest, '"')
	if q < 0 || !plainJSONString(rest[:q]) {
		return header{}, false
	}
	h.SizeBytes, h.WrittenAt, rest = int64(size), string(rest[:q]), rest[q:]
	// A header written before ids were kept ends after written_at.
	if id, found := bytes.CutPrefix(rest, []byte(headerID)); found {
		q = bytes.IndexByte(id, '"')
		if q < 0 || !plainJSONString(id[:q]) {
			return header{}, false
		}
		h.ID, rest = string(id[:q]), id[q:]
	}
	if string(rest) != headerEnd {
		return header{}, false
	}
	return h, size <= memory.MaxDocumentBytes
}

// plainJSONString reports whether b is the body of a JSON string that means its own bytes: valid
// UTF-8 with no escape and no control character.
func plainJSONString(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == '\\' {
			return false
		}
	}
	return utf8.Valid(b)
}

// cutNumber reads prefix and then a decimal number without leading zeros.
func cutNumber(b []byte, prefix string) (uint64, []byte, bool) {
	b, ok := bytes.CutPrefix(b, []byte(prefix))
	if !ok {
		return 0, nil, false
	}
	i := 0
	var v uint64
	for i < len(b) && b[i] >= '0' && b[i] <= '9' && i < 19 {
		v = v*10 + uint64(b[i]-'0')
		i++
	}
	if i == 0 || (i > 1 && b[0] == '0') {
		return 0, nil, false
	}
	return v, b[i:], true
}
