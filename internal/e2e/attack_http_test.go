package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Attacks on the HTTP face through the built binary: DNS rebinding on every
// endpoint, bodies past the limit, a body that trickles in, a flood of
// sessions, and a second client using a session that is not its own.

const rawInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`

// rawClient is a plain HTTP client whose connections leave from the loopback
// address from (a different address is a different client to the proxy).
func rawClient(from string) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	return &http.Client{
		Timeout:   testTimeout,
		Transport: &http.Transport{DialContext: d.DialContext, DisableCompression: true},
	}
}

// rawResponse is what a raw request got back; body is cut at 64 KiB.
type rawResponse struct {
	status int
	header http.Header
	body   string
}

// do sends one request to hp and returns its answer. body may be nil;
// sid, when not empty, is sent as Mcp-Session-Id.
func do(ctx context.Context, t *testing.T, c *http.Client, method, url, sid string, body io.Reader) rawResponse {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", protocolVersion)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return rawResponse{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// rawSession initializes a session with c and returns its id.
func rawSession(ctx context.Context, t *testing.T, c *http.Client, hp *httpProxy) string {
	t.Helper()
	r := do(ctx, t, c, http.MethodPost, hp.endpoint(), "", strings.NewReader(rawInitialize))
	sid := r.header.Get("Mcp-Session-Id")
	if r.status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: status %d, session id %q, body %s", r.status, sid, r.body)
	}
	r = do(ctx, t, c, http.MethodPost, hp.endpoint(), sid, strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if r.status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: status %d, body %s", r.status, r.body)
	}
	return sid
}

// listOK checks that session sid still answers tools/list for c.
func listOK(ctx context.Context, t *testing.T, c *http.Client, hp *httpProxy, sid, when string) {
	t.Helper()
	r := do(ctx, t, c, http.MethodPost, hp.endpoint(), sid, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
	if r.status != http.StatusOK || !strings.Contains(r.body, `"tools"`) {
		t.Errorf("%s: tools/list of the session: status %d, body %.300s", when, r.status, r.body)
	}
}

// wantRPCError checks that r is status with a JSON-RPC error body whose
// message contains each of parts.
func wantRPCError(t *testing.T, what string, r rawResponse, status int, parts ...string) {
	t.Helper()
	if r.status != status {
		t.Errorf("%s: status %d, want %d; body %.300s", what, r.status, status, r.body)
		return
	}
	var msg struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.body), &msg); err != nil || msg.JSONRPC != "2.0" || string(msg.ID) != "null" || msg.Error.Code == 0 {
		t.Errorf("%s: body is not a JSON-RPC error with id null: %.300s", what, r.body)
		return
	}
	for _, p := range parts {
		if !strings.Contains(msg.Error.Message, p) {
			t.Errorf("%s: error message %q does not contain %q", what, msg.Error.Message, p)
		}
	}
}

func TestHTTPAttackHostOriginOnEveryEndpoint(t *testing.T) {
	t.Parallel()
	hp := startHTTP(t, writeConfig(t, fixture("alpha", []string{"-tools", "echo"})))
	ctx := testCtx(t)
	c := rawClient("")
	endpoints := []struct {
		method, path, body string
		okStatus           int
	}{
		{http.MethodPost, "/mcp", rawInitialize, http.StatusOK},
		{http.MethodGet, "/status", "", http.StatusOK},
		{http.MethodGet, "/healthz", "", http.StatusOK},
		{http.MethodGet, "/readyz", "", http.StatusOK},
		{http.MethodGet, "/no-such-path", "", http.StatusNotFound},
	}
	attacks := []struct {
		name, host, origin string
		refused            bool
	}{
		{name: "foreign Host", host: "evil.example", refused: true},
		{name: "rebound Host with port", host: "evil.example:" + strings.Split(hp.addr, ":")[1], refused: true},
		{name: "foreign Origin", origin: "http://evil.example", refused: true},
		{name: "null Origin", origin: "null", refused: true},
		{name: "loopback Host and Origin", host: "localhost", origin: "http://127.0.0.1:9"},
	}
	for _, ep := range endpoints {
		for _, a := range attacks {
			t.Run(ep.path+"/"+a.name, func(t *testing.T) {
				var body io.Reader
				if ep.body != "" {
					body = strings.NewReader(ep.body)
				}
				req, err := http.NewRequestWithContext(ctx, ep.method, "http://"+hp.addr+ep.path, body)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				if a.host != "" {
					req.Host = a.host
				}
				if a.origin != "" {
					req.Header.Set("Origin", a.origin)
				}
				resp, err := c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
				resp.Body.Close()
				want := ep.okStatus
				if a.refused {
					want = http.StatusForbidden
				}
				if resp.StatusCode != want {
					t.Errorf("status %d, want %d; body %.200s", resp.StatusCode, want, b)
				}
				if a.refused && (strings.Contains(string(b), `"state"`) || strings.Contains(string(b), "alpha")) {
					t.Errorf("refused request still got the proxy's data: %.200s", b)
				}
				if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
					do(ctx, t, c, http.MethodDelete, hp.endpoint(), sid, nil)
				}
			})
		}
	}
}

func TestHTTPAttackBodyLimit(t *testing.T) {
	t.Parallel()
	const limit = 64 << 10
	cfg := fmt.Sprintf("[http]\nmax_body_bytes = %d\nbody_timeout = \"2s\"\n", limit) + fixture("alpha", []string{"-tools", "echo"})
	hp := startHTTP(t, writeConfig(t, cfg))
	ctx := testCtx(t)
	c := rawClient("")
	sid := rawSession(ctx, t, c, hp)

	// callOf is a tools/call of alpha__echo whose body is exactly n bytes.
	callOf := func(n int) string {
		head, tail := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"message":"`, `"}}}`
		return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
	}
	wantLimit := []string{"http.max_body_bytes", fmt.Sprint(limit)}

	t.Run("a body at the limit is served", func(t *testing.T) {
		r := do(ctx, t, c, http.MethodPost, hp.endpoint(), sid, strings.NewReader(callOf(limit)))
		if r.status != http.StatusOK || !strings.Contains(r.body, "alpha: xxx") {
			t.Errorf("status %d, body %.200s", r.status, r.body)
		}
	})
	t.Run("one byte over, with Content-Length", func(t *testing.T) {
		r := do(ctx, t, c, http.MethodPost, hp.endpoint(), sid, strings.NewReader(callOf(limit+1)))
		wantRPCError(t, "413", r, http.StatusRequestEntityTooLarge, wantLimit...)
	})
	t.Run("one byte over, chunked", func(t *testing.T) {
		// A reader of unknown length makes the client send it chunked.
		r := do(ctx, t, c, http.MethodPost, hp.endpoint(), sid, io.MultiReader(strings.NewReader(callOf(limit+1))))
		wantRPCError(t, "413", r, http.StatusRequestEntityTooLarge, wantLimit...)
	})
	t.Run("over the limit without a session", func(t *testing.T) {
		r := do(ctx, t, c, http.MethodPost, hp.endpoint(), "", io.MultiReader(strings.NewReader(rawInitialize+strings.Repeat(" ", limit))))
		wantRPCError(t, "413", r, http.StatusRequestEntityTooLarge, wantLimit...)
		if got := r.header.Get("Mcp-Session-Id"); got != "" {
			t.Errorf("refused initialize created session %q", got)
		}
	})
	t.Run("a far larger Content-Length is refused unread", func(t *testing.T) {
		// Declares 1 GiB and sends 64 KiB: the answer must not wait for the rest.
		conn, err := net.Dial("tcp", hp.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(testTimeout))
		fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n", hp.addr, 1<<30)
		_, _ = conn.Write([]byte(strings.Repeat(" ", limit)))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no answer to a 1 GiB Content-Length: %v", err)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		wantRPCError(t, "413", rawResponse{status: resp.StatusCode, header: resp.Header, body: string(b)}, http.StatusRequestEntityTooLarge, wantLimit...)
	})
	t.Run("an oversized Content-Length under 256 KiB, sent slowly, is refused unread", func(t *testing.T) {
		// 100000 bytes declared, one sent: net/http reads the rest of a body
		// this small before answering; the answer must come within
		// body_timeout, not wait for the rest.
		resp := rawPost(t, hp, "", 100000, "{")
		wantRPCError(t, "413", resp, http.StatusRequestEntityTooLarge, wantLimit...)
	})
	t.Run("concurrent oversized bodies, then the proxy still serves", func(t *testing.T) {
		var wg sync.WaitGroup
		for range 6 {
			wg.Go(func() {
				r := do(ctx, t, rawClient(""), http.MethodPost, hp.endpoint(), sid, io.MultiReader(strings.NewReader(callOf(4*limit))))
				if r.status != http.StatusRequestEntityTooLarge {
					t.Errorf("status %d, want 413", r.status)
				}
			})
		}
		wg.Wait()
		listOK(ctx, t, c, hp, sid, "after the oversized bodies")
		cs := connectHTTP(t, hp)
		if got := text(call(ctx, t, cs, "alpha__echo", map[string]any{"message": "still here"})); got != "alpha: still here" {
			t.Errorf("a new client's call = %q", got)
		}
	})
}

func TestHTTPAttackSlowBody(t *testing.T) {
	t.Parallel()
	cfg := "[http]\nbody_timeout = \"1s\"\nheader_timeout = \"1s\"\n" + fixture("alpha", []string{"-tools", "echo,sleep"})
	hp := startHTTP(t, writeConfig(t, cfg))
	ctx := testCtx(t)

	t.Run("a body trickling in is cut with 408", func(t *testing.T) {
		conn, err := net.Dial("tcp", hp.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(unfinishedWait))
		fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n", hp.addr, len(rawInitialize))
		stop := make(chan struct{})
		var wg sync.WaitGroup
		defer wg.Wait()
		defer close(stop)
		wg.Go(func() {
			// One byte every 300 ms: the whole body would take 45 s.
			tick := time.NewTicker(300 * time.Millisecond)
			defer tick.Stop()
			for i := range len(rawInitialize) {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				if _, err := conn.Write([]byte{rawInitialize[i]}); err != nil {
					return
				}
			}
		})
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no answer to a trickling body: %v", err)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		wantRPCError(t, "408", rawResponse{status: resp.StatusCode, header: resp.Header, body: string(b)}, http.StatusRequestTimeout, "http.body_timeout")
	})
	t.Run("a body never completed is cut with 408", func(t *testing.T) {
		// Content-Length 200, one byte sent, then silence.
		resp := rawPost(t, hp, "", 200, "{")
		wantRPCError(t, "408", resp, http.StatusRequestTimeout, "http.body_timeout")
	})
	t.Run("a body never completed in a session is cut with 408", func(t *testing.T) {
		sid := rawSession(ctx, t, rawClient(""), hp)
		resp := rawPost(t, hp, sid, 200, "{")
		wantRPCError(t, "408", resp, http.StatusRequestTimeout, "http.body_timeout")
	})
	t.Run("a body never completed to an unknown session gets 404", func(t *testing.T) {
		resp := rawPost(t, hp, "no-such-session", 200, "{")
		wantRPCError(t, "404", resp, http.StatusNotFound, "session not found")
	})
	t.Run("many bodies never completed are all cut, then the proxy still serves", func(t *testing.T) {
		const conns = 20
		var wg sync.WaitGroup
		for range conns {
			wg.Go(func() {
				resp := rawPost(t, hp, "", 200, "{")
				if resp.status != http.StatusRequestTimeout {
					t.Errorf("status %d, want 408", resp.status)
				}
			})
		}
		wg.Wait()
		cs := connectHTTP(t, hp)
		if got := text(call(ctx, t, cs, "alpha__echo", map[string]any{"message": "still here"})); got != "alpha: still here" {
			t.Errorf("a new client's call = %q", got)
		}
	})
	t.Run("many connections with unfinished headers are all closed", func(t *testing.T) {
		const conns = 20
		var wg sync.WaitGroup
		for range conns {
			wg.Go(func() {
				conn, err := net.Dial("tcp", hp.addr)
				if err != nil {
					t.Error(err)
					return
				}
				defer conn.Close()
				_ = conn.SetDeadline(time.Now().Add(testTimeout))
				fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\n", hp.addr)
				if _, err := io.Copy(io.Discard, conn); err != nil {
					t.Errorf("the proxy kept the connection of unfinished headers open: %v", err)
				}
			})
		}
		wg.Wait()
	})
	t.Run("headers trickling in are cut", func(t *testing.T) {
		conn, err := net.Dial("tcp", hp.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(testTimeout))
		fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\n", hp.addr)
		// Never finish the headers: the proxy must close the connection.
		if _, err := io.Copy(io.Discard, conn); err != nil {
			t.Errorf("the proxy kept the connection of unfinished headers open: %v", err)
		}
	})
	t.Run("responses are not bounded: a call longer than both timeouts", func(t *testing.T) {
		cs := connectHTTP(t, hp)
		if got, want := text(call(ctx, t, cs, "alpha__sleep", map[string]any{"ms": 2500})), "alpha: slept 2500 ms"; got != want {
			t.Errorf("alpha__sleep = %q, want %q", got, want)
		}
		if got := text(call(ctx, t, cs, "alpha__echo", map[string]any{"message": "after"})); got != "alpha: after" {
			t.Errorf("the session after a long call: alpha__echo = %q", got)
		}
	})
}

// unfinishedWait bounds the wait for the answer to a body that is never
// completed (or would take longer than this to complete): far beyond the body
// timeouts the tests set, far below the time a trickling body takes.
const unfinishedWait = 30 * time.Second

// rawPost sends a POST to /mcp declaring a body of contentLength bytes,
// sends only sent of it and then nothing more, and returns the answer. sid,
// when not empty, is sent as Mcp-Session-Id. The connection stays open (the
// body is never completed) until the answer has been read or unfinishedWait.
func rawPost(t *testing.T, hp *httpProxy, sid string, contentLength int, sent string) rawResponse {
	t.Helper()
	conn, err := net.Dial("tcp", hp.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(unfinishedWait))
	head := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n", hp.addr, contentLength)
	if sid != "" {
		head += "Mcp-Session-Id: " + sid + "\r\nMcp-Protocol-Version: " + protocolVersion + "\r\n"
	}
	if _, err := io.WriteString(conn, head+"\r\n"+sent); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a body of %d bytes of which %d were sent: %v", contentLength, len(sent), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		t.Fatalf("reading the answer to an unfinished body: %v", err)
	}
	return rawResponse{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

func TestHTTPAttackSessionFlood(t *testing.T) {
	t.Parallel()
	const max = 3
	cfg := fmt.Sprintf("[http]\nmax_sessions = %d\n", max) + fixture("alpha", []string{"-tools", "echo"})
	hp := startHTTP(t, writeConfig(t, cfg))
	ctx := testCtx(t)
	c := rawClient("")

	const flood = 40
	var mu sync.Mutex
	var created []string
	refused := 0
	var wg sync.WaitGroup
	for range flood {
		wg.Go(func() {
			r := do(ctx, t, rawClient(""), http.MethodPost, hp.endpoint(), "", strings.NewReader(rawInitialize))
			mu.Lock()
			defer mu.Unlock()
			switch r.status {
			case http.StatusOK:
				created = append(created, r.header.Get("Mcp-Session-Id"))
			case http.StatusServiceUnavailable:
				refused++
				if refused == 1 {
					wantRPCError(t, "503", r, http.StatusServiceUnavailable, "http.max_sessions", fmt.Sprint(max))
					if r.header.Get("Retry-After") == "" {
						t.Errorf("503 without Retry-After")
					}
				}
			default:
				t.Errorf("initialize: status %d, body %.200s", r.status, r.body)
			}
		})
	}
	wg.Wait()
	if len(created) != max || refused != flood-max {
		t.Fatalf("%d initializes: %d sessions created and %d refused, want %d and %d", flood, len(created), refused, max, flood-max)
	}
	wantRPCError(t, "at the cap", do(ctx, t, c, http.MethodPost, hp.endpoint(), "", strings.NewReader(rawInitialize)), http.StatusServiceUnavailable, "http.max_sessions")

	// Ending a session frees its place.
	if r := do(ctx, t, c, http.MethodDelete, hp.endpoint(), created[0], nil); r.status != http.StatusNoContent {
		t.Fatalf("DELETE: status %d, body %s", r.status, r.body)
	}
	sid := rawSession(ctx, t, c, hp)
	listOK(ctx, t, c, hp, sid, "a session created after one ended")
}

func TestHTTPAttackIdleSessions(t *testing.T) {
	t.Parallel()
	cfg := "[http]\nsession_idle_timeout = \"1s\"\nmax_sessions = 2\n" + fixture("alpha", []string{"-tools", "echo,sleep"})
	hp := startHTTP(t, writeConfig(t, cfg))
	ctx := testCtx(t)
	c := rawClient("")

	t.Run("a call longer than the idle timeout keeps its session", func(t *testing.T) {
		sid := rawSession(ctx, t, c, hp)
		r := do(ctx, t, c, http.MethodPost, hp.endpoint(), sid, strings.NewReader(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"alpha__sleep","arguments":{"ms":2500}}}`))
		if r.status != http.StatusOK || !strings.Contains(r.body, "slept 2500 ms") {
			t.Fatalf("long call: status %d, body %.300s", r.status, r.body)
		}
		listOK(ctx, t, c, hp, sid, "right after the long call")
	})
	t.Run("an idle session is closed and its place freed", func(t *testing.T) {
		sid := rawSession(ctx, t, c, hp)
		deadline := time.Now().Add(testTimeout / 2)
		for {
			r := do(ctx, t, c, http.MethodPost, hp.endpoint(), sid, strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
			if r.status == http.StatusNotFound {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("session still open after %s with a 1s idle timeout: status %d", testTimeout/2, r.status)
			}
			// Poll slower than the idle timeout, or the poll keeps it alive.
			time.Sleep(1500 * time.Millisecond)
		}
		// Both places are free again once the idle sessions are gone.
		for range 2 {
			sid := ""
			deadline := time.Now().Add(testTimeout / 2)
			for sid == "" {
				r := do(ctx, t, c, http.MethodPost, hp.endpoint(), "", strings.NewReader(rawInitialize))
				switch {
				case r.status == http.StatusOK:
					sid = r.header.Get("Mcp-Session-Id")
				case time.Now().After(deadline):
					t.Fatalf("no place for a new session: status %d, body %.200s", r.status, r.body)
				default:
					time.Sleep(500 * time.Millisecond)
				}
			}
		}
	})
}

func TestHTTPAttackSessionHijack(t *testing.T) {
	t.Parallel()
	hp := startHTTP(t, writeConfig(t, fixture("alpha", []string{"-tools", "echo"})))
	ctx := testCtx(t)
	victim, attacker := rawClient("127.0.0.1"), rawClient("127.0.0.2")
	sid := rawSession(ctx, t, victim, hp)

	t.Run("another client cannot end the session", func(t *testing.T) {
		wantRPCError(t, "DELETE", do(ctx, t, attacker, http.MethodDelete, hp.endpoint(), sid, nil), http.StatusForbidden, "another client")
		listOK(ctx, t, victim, hp, sid, "after another client's DELETE")
	})
	t.Run("another client cannot open its stream", func(t *testing.T) {
		gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		wantRPCError(t, "GET", do(gctx, t, attacker, http.MethodGet, hp.endpoint(), sid, nil), http.StatusForbidden, "another client")
	})
	t.Run("another client cannot post to it", func(t *testing.T) {
		wantRPCError(t, "POST", do(ctx, t, attacker, http.MethodPost, hp.endpoint(), sid, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`)), http.StatusForbidden, "another client")
	})
	t.Run("a second GET stream is refused, not taken over", func(t *testing.T) {
		gctx, cancel := context.WithCancel(ctx)
		defer cancel()
		req, err := http.NewRequestWithContext(gctx, http.MethodGet, hp.endpoint(), nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", protocolVersion)
		first, err := victim.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer first.Body.Close()
		if first.StatusCode != http.StatusOK {
			t.Fatalf("first GET: status %d", first.StatusCode)
		}
		wantRPCError(t, "second GET", do(ctx, t, victim, http.MethodGet, hp.endpoint(), sid, nil), http.StatusConflict, "already has a GET stream")
		cancel()
		first.Body.Close()
		// Once the first stream has gone, a new one may open.
		deadline := time.Now().Add(testTimeout / 2)
		for {
			g2ctx, cancel2 := context.WithCancel(ctx)
			req, _ := http.NewRequestWithContext(g2ctx, http.MethodGet, hp.endpoint(), nil)
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", protocolVersion)
			resp, err := victim.Do(req)
			if err != nil {
				cancel2()
				t.Fatal(err)
			}
			status := resp.StatusCode
			cancel2()
			resp.Body.Close()
			if status == http.StatusOK {
				break
			}
			if status != http.StatusConflict || time.Now().After(deadline) {
				t.Fatalf("GET after the first stream closed: status %d", status)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	t.Run("its owner still ends it", func(t *testing.T) {
		if r := do(ctx, t, victim, http.MethodDelete, hp.endpoint(), sid, nil); r.status != http.StatusNoContent {
			t.Errorf("owner's DELETE: status %d, body %s", r.status, r.body)
		}
	})
}

// TestHTTPAttackSessionOfAnotherUser: another local user on the same address
// (a socket owned by uid 65534, "nobody") cannot use a session, and its own
// session is its own on every connection it opens.
func TestHTTPAttackSessionOfAnotherUser(t *testing.T) {
	t.Parallel()
	other, err := clientAsUser(65534)
	if err != nil {
		t.Skipf("cannot open a socket as another user: %v", err)
	}
	hp := startHTTP(t, writeConfig(t, fixture("alpha", []string{"-tools", "echo"})))
	ctx := testCtx(t)
	me := rawClient("127.0.0.1")
	sid := rawSession(ctx, t, me, hp)

	wantRPCError(t, "other user's DELETE", do(ctx, t, other, http.MethodDelete, hp.endpoint(), sid, nil), http.StatusForbidden, "another client")
	wantRPCError(t, "other user's POST", do(ctx, t, other, http.MethodPost, hp.endpoint(), sid, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`)), http.StatusForbidden, "another client")
	listOK(ctx, t, me, hp, sid, "after the other user's requests")

	theirs := rawSession(ctx, t, other, hp)
	other.CloseIdleConnections() // the next request comes on a new connection
	listOK(ctx, t, other, hp, theirs, "the other user's own session, on a new connection")
	wantRPCError(t, "my DELETE of their session", do(ctx, t, me, http.MethodDelete, hp.endpoint(), theirs, nil), http.StatusForbidden, "another client")
}
