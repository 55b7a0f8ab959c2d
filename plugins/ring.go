package plugins

import (
	"bytes"
	"sync"
)

// StderrLines is how many raw stderr lines the host keeps per instance: enough to see a panic's
// head and the lines before it, small enough to show in a status read.
const StderrLines = 50

// lineRing keeps the last StderrLines lines written to it.
type lineRing struct {
	mu      sync.Mutex
	lines   []string
	partial []byte
}

func (r *lineRing) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.partial = append(r.partial, p...)
	for {
		i := bytes.IndexByte(r.partial, '\n')
		if i < 0 {
			break
		}
		r.lines = append(r.lines, string(r.partial[:i]))
		r.partial = r.partial[i+1:]
		if len(r.lines) > StderrLines {
			r.lines = r.lines[len(r.lines)-StderrLines:]
		}
	}
	return len(p), nil
}

// Lines answers a copy of the kept lines.
func (r *lineRing) Lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string{}, r.lines...)
}
