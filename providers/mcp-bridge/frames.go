package mcpbridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxFrameBytes bounds one JSON-RPC message a stdio server sends, its line end included: the
// MCP Go SDK's own bound for a stdio message, which leaves room for a result at the bounds of
// docs/plugins.md#what-a-model-sees (8 MiB of files, in base64, and the text beside them).
const maxFrameBytes = 16 << 20

// maxFrameID bounds the request id the bridge reads back from a message over maxFrameBytes; the
// bridge's own ids are short integers.
const maxFrameID = 64

// frameErrorCode is the JSON-RPC error code of the answer that replaces a message over the bound
// (the implementation-defined server error range).
const frameErrorCode = -32000

// oversizeMessage is the failure detail of a call whose answer was over maxFrameBytes.
func oversizeMessage(server string) string {
	return fmt.Sprintf("mcp server %s sent an answer over %d MiB, the bound on one message from a server: the answer was dropped", server, maxFrameBytes>>20)
}

// stdioTransport is the MCP SDK's CommandTransport with the server's messages bounded one by
// one: the SDK's own reader, given a message over its bound, ends the connection, which restarts
// the server, loses every call in flight with it and counts against the breaker. Here a message
// over maxFrameBytes is read to its end and dropped, and when it answers one of the bridge's
// requests that request gets a JSON-RPC error in its place (oversizeMessage): the one call fails
// (tool_failed) and the server serves on (docs/plugins.md#what-a-model-sees).
type stdioTransport struct {
	cmd    *exec.Cmd
	server string
}

// Connect starts the command and speaks JSON-RPC over its stdin and stdout.
func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	pipes := &mcp.IOTransport{
		Reader: &boundedFrames{r: bufio.NewReaderSize(stdout, 64<<10), limit: maxFrameBytes, server: t.server},
		Writer: &stdinCloser{cmd: t.cmd, stdin: stdin},
		// Every line the reader passes on is within maxFrameBytes already.
		MaxLineLength: -1,
	}
	return pipes.Connect(ctx)
}

// stdinCloser ends a stdio server as the SDK's CommandTransport does (the MCP lifecycle for
// stdio): close its stdin, wait stdioTerminate, then SIGTERM, wait again, then kill.
type stdinCloser struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

func (s *stdinCloser) Write(p []byte) (int, error) { return s.stdin.Write(p) }

func (s *stdinCloser) Close() error {
	if err := s.stdin.Close(); err != nil {
		return fmt.Errorf("closing stdin: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	wait := func() (error, bool) {
		t := time.NewTimer(stdioTerminate)
		defer t.Stop()
		select {
		case err := <-done:
			return err, true
		case <-t.C:
			return nil, false
		}
	}
	if err, ok := wait(); ok {
		return err
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err == nil {
		if err, ok := wait(); ok {
			return err
		}
	}
	if err := s.cmd.Process.Kill(); err != nil {
		return err
	}
	if err, ok := wait(); ok {
		return err
	}
	return errors.New("the server's process did not end")
}

// boundedFrames passes a stdio server's messages (one a line) through whole, and replaces one
// over limit bytes: it is read to its line end and dropped, and an error answer for its request
// id takes its place when it answers one of the bridge's requests (it has an id and no method).
type boundedFrames struct {
	r       *bufio.Reader
	limit   int
	server  string
	line    []byte
	pending []byte
}

func (b *boundedFrames) Read(p []byte) (int, error) {
	for len(b.pending) == 0 {
		if err := b.next(); err != nil {
			return 0, err
		}
	}
	n := copy(p, b.pending)
	b.pending = b.pending[n:]
	return n, nil
}

// Close leaves the pipe to the process's end (stdinCloser), as the SDK's transport does.
func (b *boundedFrames) Close() error { return nil }

// next reads the next line into pending: the line itself, or its replacement, or nothing.
func (b *boundedFrames) next() error {
	b.line = b.line[:0]
	for {
		frag, err := b.r.ReadSlice('\n')
		if len(b.line)+len(frag) > b.limit {
			return b.oversize(frag, err)
		}
		b.line = append(b.line, frag...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if len(b.line) > 0 && (err == nil || err == io.EOF) {
			b.pending = b.line
			return nil
		}
		return err
	}
}

// oversize reads the rest of a line over the bound, scanning it for its top-level id, and
// queues the error answer when the line answers a request.
func (b *boundedFrames) oversize(frag []byte, err error) error {
	var s idScanner
	s.feed(b.line)
	b.line = b.line[:0]
	for {
		s.feed(frag)
		if err != bufio.ErrBufferFull {
			break
		}
		frag, err = b.r.ReadSlice('\n')
	}
	if err != nil && err != io.EOF {
		return err
	}
	if s.id == nil || s.method {
		return err // a notification, or a request of the server's: nothing waits for it
	}
	answer, merr := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: s.id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{frameErrorCode, oversizeMessage(b.server)}})
	if merr != nil {
		return merr
	}
	b.pending = append(answer, '\n')
	return nil
}

// idScanner finds the top-level "id" of a JSON object read in pieces, and whether it has a
// top-level "method", without keeping the object: it tracks strings, escapes and depth, and
// keeps only a key's first bytes and the id's value.
type idScanner struct {
	depth    int
	inString bool
	escaped  bool
	// inKey: the string being read is a key of the top-level object; key holds its first
	// bytes and keyLen its length.
	inKey   bool
	key     [6]byte
	keyLen  int
	wantKey bool
	// afterKey is the last key read at the top level, waiting for its colon.
	afterKey string
	// value: 1 when the id's value comes next, 2 while it is read into raw.
	value  int
	raw    []byte
	id     json.RawMessage
	method bool
	broken bool // an id too long to be one of the bridge's
}

func (s *idScanner) feed(p []byte) {
	for i := 0; i < len(p); i++ {
		if s.inString && !s.escaped && !s.inKey && s.value != 2 {
			// Inside a string no one keeps (the 16 MiB text of a result): only its end or an
			// escape matters.
			j := bytes.IndexAny(p[i:], `"\`)
			if j < 0 {
				return
			}
			i += j
		}
		s.byte(p[i])
	}
}

func (s *idScanner) byte(c byte) {
	if s.value == 2 && !s.broken {
		s.raw = append(s.raw, c)
		if len(s.raw) > maxFrameID {
			s.broken, s.value = true, 0
			s.raw = nil
		}
	}
	if s.inString {
		switch {
		case s.escaped:
			s.escaped = false
		case c == '\\':
			s.escaped = true
		case c == '"':
			s.inString = false
			if s.inKey {
				s.inKey = false
				s.afterKey = ""
				if s.keyLen <= len(s.key) {
					s.afterKey = string(s.key[:s.keyLen])
				}
				if s.afterKey == "method" {
					s.method = true
				}
			} else if s.value == 2 {
				s.finishID()
			}
			return
		}
		if s.inKey {
			if s.keyLen < len(s.key) {
				s.key[s.keyLen] = c
			}
			s.keyLen++
		}
		return
	}
	if s.value == 2 {
		// A number or a literal ends at the next structural character or space.
		switch c {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			s.raw = s.raw[:len(s.raw)-1]
			s.finishID()
		default:
			return
		}
	}
	switch c {
	case '"':
		s.inString = true
		switch {
		case s.depth == 1 && s.wantKey:
			s.inKey, s.keyLen, s.wantKey = true, 0, false
		case s.value == 1:
			s.value, s.raw = 2, append(s.raw[:0], '"')
		}
	case '{', '[':
		s.depth++
		s.wantKey = s.depth == 1 && c == '{'
		if s.value == 1 {
			s.value = 0 // an object or array is no id
		}
	case '}', ']':
		s.depth--
	case ',':
		s.wantKey = s.depth == 1
	case ':':
		if s.depth == 1 && s.afterKey == "id" {
			s.value = 1
		}
		s.afterKey = ""
	case ' ', '\t', '\r', '\n':
	default:
		if s.value == 1 {
			s.value, s.raw = 2, append(s.raw[:0], c)
		}
	}
}

func (s *idScanner) finishID() {
	s.value = 0
	if s.id == nil && json.Valid(s.raw) {
		s.id = append(json.RawMessage(nil), s.raw...)
	}
}
