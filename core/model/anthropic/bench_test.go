package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/model/modeltest"
)

// b14Stream is B14's answer on this wire: 50 tool_use blocks whose input is split across 5,000
// input_json_delta events.
func b14Stream() []byte {
	var s bytes.Buffer
	const calls, chunks = 50, 5000
	per := chunks / calls
	s.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n")
	for i := range calls {
		fmt.Fprintf(&s, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":%d,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_%d\",\"name\":\"read_file\",\"input\":{}}}\n\n", i, i)
		for k := 2; k < per; k++ {
			fmt.Fprintf(&s, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":%d,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"p%d\\\":1,\"}}\n\n", i, k)
		}
		fmt.Fprintf(&s, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":%d}\n\n", i)
	}
	s.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":900}}\n\n")
	s.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	return s.Bytes()
}

// BenchmarkB14Stream is B14 on the anthropic wire: the fold against bufio.Scanner and
// json.Unmarshal of the same events (goal: at most 2x).
func BenchmarkB14Stream(b *testing.B) {
	body := b14Stream()
	log := hclog.NewNullLogger()
	b.SetBytes(int64(len(body)))
	b.ReportMetric(float64(len(body)), "answer-bytes")
	modeltest.SideBySide(b, []string{"fold", "scanner+unmarshal"},
		func() {
			a, _, err := readStream(bytes.NewReader(body), log, nil)
			if err != nil || len(a.calls) != 50 {
				b.Fatalf("%v", err)
			}
		},
		func() {
			if n := modeltest.ScanEvents(b, bytes.NewReader(body), func(data []byte) error {
				var ev eventWire
				return json.Unmarshal(data, &ev)
			}); n != 5003 {
				b.Fatalf("%d events", n)
			}
		})
}
