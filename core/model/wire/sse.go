package wire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// MaxBodyBytes bounds a response body, streamed or not: far above any answer within
// max_output_tokens, it bounds the memory of one worker.
const MaxBodyBytes = 16 << 20

// ErrBodyTooLarge is a response body over MaxBodyBytes.
var ErrBodyTooLarge = errors.New("the response body is over 16 MiB")

// Event is one Server-Sent Event: its event name ("" when the stream sends none) and its data
// lines joined with "\n".
type Event struct {
	Name string
	Data []byte
	// Cut says the body ended inside the event's last line, without its line end: the event
	// may be whole ("data: [DONE]" at the very end) or a stream cut inside a chunk. An adapter
	// that cannot read a cut event treats it as a broken stream (io.ErrUnexpectedEOF), retried
	// as a stream cut at a line end is.
	Cut bool
}

// SSEReader reads Server-Sent Events from a body, bounded at MaxBodyBytes in all. Comment lines
// and fields other than event and data are ignored. An event's Data is valid until the next
// call of Next.
type SSEReader struct {
	r     *bufio.Reader
	read  int64
	limit int64
	name  []byte
	data  []byte
	line  []byte
	// cut is set when the last line read had no line end.
	cut bool
}

// NewSSEReader reads events from r.
func NewSSEReader(r io.Reader) *SSEReader {
	return &SSEReader{r: bufio.NewReaderSize(r, 32<<10), limit: MaxBodyBytes}
}

// Read is how many body bytes the reader consumed.
func (s *SSEReader) Read() int64 { return s.read }

// Next returns the next event. At the end of the body it returns io.EOF, after any event whose
// lines were complete (a last event without its blank line still counts).
func (s *SSEReader) Next() (Event, error) {
	s.name, s.data = s.name[:0], s.data[:0]
	seen := false
	for {
		line, err := s.readLine()
		if err != nil {
			if err == io.EOF && seen {
				return Event{Name: string(s.name), Data: s.data, Cut: s.cut}, nil
			}
			return Event{}, err
		}
		if len(line) == 0 {
			if seen {
				return Event{Name: string(s.name), Data: s.data}, nil
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, found := bytes.Cut(line, []byte{':'})
		if found && len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(field) {
		case "event":
			s.name = append(s.name[:0], value...)
			seen = true
		case "data":
			if seen && len(s.data) > 0 {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, value...)
			seen = true
		}
	}
}

// readLine reads one line without its end (\n, \r\n or \r before \n), counting bytes against
// the limit.
func (s *SSEReader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		frag, err := s.r.ReadSlice('\n')
		s.read += int64(len(frag))
		if s.read > s.limit {
			return nil, ErrBodyTooLarge
		}
		s.line = append(s.line, frag...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if err == io.EOF && len(s.line) > 0 {
				s.cut = true
				return bytes.TrimSuffix(s.line, []byte{'\r'}), nil
			}
			return nil, err
		}
		l := s.line[:len(s.line)-1]
		return bytes.TrimSuffix(l, []byte{'\r'}), nil
	}
}

// ReadBody reads a whole non-streamed body, bounded at limit bytes.
func ReadBody(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, ErrBodyTooLarge
	}
	return b, nil
}
