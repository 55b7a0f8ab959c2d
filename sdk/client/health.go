package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// maxReadyBody bounds the /readyz answer the client reads: a status and a few reasons.
const maxReadyBody = 64 << 10

// NotReady is the answer of a server that serves HTTP but cannot take work yet: /readyz's status
// and the reasons it gave (docs/operations.md#health).
type NotReady struct {
	// Status is the HTTP status, 503 from a Nexus server.
	Status int
	// Reasons are the server's reasons, for example "plugins: starting".
	Reasons []string
}

func (e *NotReady) Error() string {
	if len(e.Reasons) == 0 {
		return fmt.Sprintf("not ready (%d)", e.Status)
	}
	return "not ready: " + strings.Join(e.Reasons, "; ")
}

// Ready reads GET /readyz, which needs no token: nil when the server answers ready, *NotReady
// when it answers anything else, or the error that kept it from answering.
func (c *Client) Ready(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxReadyBody))
	if err != nil {
		return err
	}
	var body struct {
		Status  string   `json:"status"`
		Reasons []string `json:"reasons"`
	}
	decoded := json.Unmarshal(raw, &body) == nil
	if resp.StatusCode == http.StatusOK && decoded && body.Status == "ready" {
		return nil
	}
	nr := &NotReady{Status: resp.StatusCode, Reasons: body.Reasons}
	if !decoded {
		// Not a Nexus server, or something in front of it: its own words.
		if text := strings.TrimSpace(string(raw)); text != "" {
			nr.Reasons = []string{text}
		}
	}
	return nr
}
