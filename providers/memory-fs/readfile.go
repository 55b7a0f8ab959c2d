package memoryfs

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/nexuskernel/nexus/sdk/memory"
)

// readBuffers recycles the buffers document files are read into: a document file is at most
// maxFileBytes, so one buffer of that size (plus a byte to notice an oversized file) fits any.
var readBuffers = sync.Pool{New: func() any { b := make([]byte, maxFileBytes+1); return &b }}

// docFile is one document file read into a pooled buffer; release returns the buffer.
type docFile struct {
	data []byte
	buf  *[]byte
}

func (d docFile) release() { readBuffers.Put(d.buf) }

// readDoc reads the document file fileName in the directory dir (handle when the directory is
// already open, else nil). With headerOnly it stops once the header line is in. A missing
// file answers an error matching os.ErrNotExist; a file larger than any document is corrupt.
func readDoc(handle *dirHandle, dir, fileName string, headerOnly bool) (docFile, error) {
	buf := readBuffers.Get().(*[]byte)
	limit := len(*buf)
	if headerOnly {
		limit = maxHeaderBytes + 1
	}
	path := fileName
	if handle == nil {
		path = filepath.Join(dir, fileName)
	}
	n, err := readFileInto(handle, path, (*buf)[:limit], headerOnly)
	if err != nil {
		readBuffers.Put(buf)
		return docFile{}, err
	}
	if !headerOnly && n == limit {
		readBuffers.Put(buf)
		return docFile{}, corrupt(fileName, fmt.Sprintf("file over %d bytes", maxFileBytes))
	}
	return docFile{data: (*buf)[:n], buf: buf}, nil
}

// enough reports whether a read can stop before end of file: a header-only read once the
// header line is in, a whole read once the content the header announces is in. A regular file
// answers a read in full, so a document is one read call, not a read and another for the end of
// file; a file longer than its header says is still caught, by decodeDoc, because that first
// read returns the excess too.
func enough(data []byte, headerOnly bool) bool {
	nl := bytes.IndexByte(data, '\n')
	if nl < 0 {
		return false
	}
	if headerOnly {
		return true
	}
	size, ok := announcedSize(data[:nl])
	return ok && len(data) >= nl+1+size
}

// announcedSize finds the size_bytes value of a header line without decoding it.
func announcedSize(line []byte) (int, bool) {
	i := bytes.Index(line, []byte(headerSize))
	if i < 0 {
		return 0, false
	}
	v, _, ok := cutNumber(line[i:], headerSize)
	if !ok || v > memory.MaxDocumentBytes {
		return 0, false
	}
	return int(v), true
}
