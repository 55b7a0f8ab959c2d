package server

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/httpapi"
	"github.com/nexuskernel/nexus/core/store"
)

// slowClient is one raw connection that sends head (and no more) and then waits for the server.
type slowClient struct {
	name string
	head string
	// status is the answer the server must give before it closes the connection; 0 for none
	// (the header bound cuts the client without an answer).
	status int
	code   string
}

// TestSlowBodiesAreCut: on a real listener, clients that send nothing, headers slowly, or a body
// slowly or not at all are each answered or cut within the bounds (an anonymous one at once or
// by the header bound, an authenticated one by the body bound with 408 request_timeout), and
// their connections closed, while an ordinary client is served all along.
func TestSlowBodiesAreCut(t *testing.T) {
	t.Parallel()
	const header, body = 2 * time.Second, 3 * time.Second
	srv, s := openServer(t, store.SQLite, Options{ReadHeaderTimeout: header,
		BodyTimeouts: httpapi.Timeouts{Body: body, UploadStall: body, Upload: time.Minute}})
	raw, err := os.ReadFile(filepath.Join(s.DataDir, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimSpace(string(raw))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	addr := ln.Addr().String()

	send := func(method, path, auth, ctype string, length int, sent string) string {
		h := method + " " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: " + ctype + "\r\n"
		if auth != "" {
			h += "Authorization: Bearer " + auth + "\r\n"
		}
		if length >= 0 {
			h += "Content-Length: " + itoa(length) + "\r\n"
		}
		return h + "\r\n" + sent
	}
	post := func(path, auth, ctype string, length int, sent string) string {
		return send("POST", path, auth, ctype, length, sent)
	}
	const boundary = "b0undary"
	upload := "--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\nsome bytes, then nothing"
	clients := []slowClient{
		{name: "silent", head: ""},
		{name: "slow headers", head: "POST /agent_api/v1/tokens HTTP/1.1\r\nHost: x\r\n"},
		{name: "anonymous, body promised", head: post("/agent_api/v1/tokens", "", "application/json", 100, `{"tok`), status: 401, code: "unauthorized"},
		{name: "anonymous upload, body promised", head: post("/agent_api/v1/uploads", "", "multipart/form-data; boundary="+boundary, 1000, upload), status: 401, code: "unauthorized"},
		{name: "wrong plane's token, body promised", head: send("PUT", "/agent_api/v1/executor/announcement", tok, "application/json", 100, `{`), status: 401, code: "unauthorized"},
		{name: "unrouted, body promised", head: post("/agent_api/v1/executor/announcement", tok, "application/json", 100, `{`), status: 405, code: "method_not_allowed"},
		{name: "over the bound, body promised", head: post("/agent_api/v1/tokens", "", "application/json", 2<<20, `{`), status: 413, code: "content_too_large"},
		{name: "authenticated, body stalls", head: post("/agent_api/v1/tokens", tok, "application/json", 100, `{"tok`), status: 408, code: "request_timeout"},
		{name: "authenticated, chunked body stalls", head: "POST /agent_api/v1/tokens HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + tok + "\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"tok\r\n", status: 408, code: "request_timeout"},
		{name: "authenticated upload stalls", head: post("/agent_api/v1/uploads", tok, "multipart/form-data; boundary="+boundary, 100000, upload), status: 408, code: "request_timeout"},
	}
	var wg sync.WaitGroup
	for _, c := range clients {
		for i := 0; i < 5; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cutWithin(t, addr, c, 10*time.Second)
			}()
		}
	}
	// Meanwhile an ordinary client is served, again and again.
	stop := make(chan struct{})
	served := make(chan int, 1)
	firstServed := make(chan struct{})
	go func() {
		n := 0
		defer func() { served <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			req, _ := http.NewRequest("POST", "http://"+addr+"/agent_api/v1/tokens", strings.NewReader(`{"token":{"label":"ok"}}`))
			req.Header.Set("Authorization", "Bearer "+tok)
			start := time.Now()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Errorf("ordinary client: %v", err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			// Served while the slow clients hold their connections. How fast is not asserted:
			// on a loaded machine one durable SQLite commit can take seconds.
			if resp.StatusCode != 201 {
				t.Errorf("ordinary client: %d after %s", resp.StatusCode, time.Since(start))
				return
			}
			if n++; n == 1 {
				close(firstServed)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	wg.Wait()
	select {
	case <-firstServed:
	default:
		t.Error("the ordinary client was not served while the slow ones waited")
	}
	close(stop)
	<-served
}

// cutWithin sends c's head and checks that the server answers (when c expects an answer) and
// closes the connection within limit.
func cutWithin(t *testing.T, addr string, c slowClient, limit time.Duration) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Errorf("%s: %v", c.name, err)
		return
	}
	defer conn.Close()
	start := time.Now()
	if _, err := io.WriteString(conn, c.head); err != nil {
		t.Errorf("%s: %v", c.name, err)
		return
	}
	_ = conn.SetReadDeadline(start.Add(limit))
	br := bufio.NewReader(conn)
	if c.status != 0 {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Errorf("%s: no answer: %v", c.name, err)
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || !strings.Contains(string(b), `"code":"`+c.code+`"`) || !resp.Close {
			t.Errorf("%s: %d %s (close %v), want %d %s and the connection closed", c.name, resp.StatusCode, b, resp.Close, c.status, c.code)
		}
	}
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Errorf("%s: the connection was still open after %s (%v)", c.name, time.Since(start), err)
		return
	}
	if c.status == 0 && len(rest) > 0 && !strings.HasPrefix(string(rest), "HTTP/1.1 408") {
		t.Errorf("%s: unexpected answer %q", c.name, rest)
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
