package streamable

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"testing/iotest"
	"testing/synctest"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/manifold-mcp/manifold/proxy/session"
)

func TestHostAllowed(t *testing.T) {
	tests := []struct {
		host    string
		allowed []string
		want    bool
	}{
		{host: "localhost:7777", want: true},
		{host: "127.0.0.1:7777", want: true},
		{host: "[::1]:7777", want: true},
		{host: "LOCALHOST", want: true},
		{host: "127.0.0.2:80", want: true},
		{host: "evil.example", want: false},
		{host: "evil.example:7777", want: false},
		{host: "localhost.evil.example", want: false},
		{host: "manifold.lan:7777", allowed: []string{"manifold.lan"}, want: true},
		{host: "other.lan:7777", allowed: []string{"manifold.lan"}, want: false},
		{host: "", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			if got := hostAllowed(tt.host, tt.allowed); got != tt.want {
				t.Errorf("hostAllowed(%q, %q) = %v, want %v", tt.host, tt.allowed, got, tt.want)
			}
		})
	}
}

func TestOriginAllowed(t *testing.T) {
	tests := []struct {
		origin  string
		allowed []string
		want    bool
	}{
		{origin: "http://localhost:1234", want: true},
		{origin: "https://127.0.0.1", want: true},
		{origin: "http://[::1]:3000", want: true},
		{origin: "http://evil.example", want: false},
		{origin: "http://localhost.evil.example", want: false},
		{origin: "null", want: false},
		{origin: "file://", want: false},
		{origin: "https://app.example", allowed: []string{"https://app.example/"}, want: true},
		{origin: "https://app.example:8443", allowed: []string{"https://app.example"}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.origin, func(t *testing.T) {
			if got := originAllowed(tt.origin, tt.allowed); got != tt.want {
				t.Errorf("originAllowed(%q, %q) = %v, want %v", tt.origin, tt.allowed, got, tt.want)
			}
		})
	}
}

// TestSessionOwner checks who may use a session: only its creator, the same
// address and the same user, and one GET stream at a time.
func TestSessionOwner(t *testing.T) {
	owner := peer{Addr: netip.MustParseAddr("127.0.0.1"), UID: 1000}
	tests := []struct {
		name   string
		id     string
		who    peer
		stream bool
		want   enterResult
	}{
		{name: "owner", id: "s1", who: owner, want: entered},
		{name: "owner's stream", id: "s1", who: owner, stream: true, want: entered},
		{name: "owner's second stream", id: "s1", who: owner, stream: true, want: streamOpen},
		{name: "another user on the same address", id: "s1", who: peer{Addr: owner.Addr, UID: 1001}, want: otherOwner},
		{name: "user unknown", id: "s1", who: peer{Addr: owner.Addr, UID: -1}, want: otherOwner},
		{name: "another address, same user", id: "s1", who: peer{Addr: netip.MustParseAddr("127.0.0.2"), UID: 1000}, want: otherOwner},
		{name: "another client's stream", id: "s1", who: peer{Addr: owner.Addr, UID: 0}, stream: true, want: otherOwner},
		{name: "unknown session", id: "s2", who: owner, want: unknownSession},
	}
	h := &httpSessions{max: 1, idle: time.Hour, byID: map[string]*httpSession{"s1": {id: "s1", owner: owner}}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, got := h.enter(tt.id, tt.who, tt.stream); got != tt.want {
				t.Errorf("enter(%q, %v, stream=%v) = %v, want %v", tt.id, tt.who, tt.stream, got, tt.want)
			}
		})
	}
	if h.reserve() {
		t.Errorf("reserve() with max 1 and one session = true, want false")
	}
}

// TestPeerOfLoopback records a peer's address in one form (the IPv6 loopback
// as 127.0.0.1, IPv4-mapped addresses unmapped), and no user id when no
// socket can be found.
func TestPeerOfLoopback(t *testing.T) {
	tests := []struct{ remote, want string }{
		{remote: "[::1]:5000", want: "127.0.0.1"},
		{remote: "[::ffff:127.0.0.2]:5000", want: "127.0.0.2"},
		{remote: "192.0.2.7:5000", want: "192.0.2.7"},
		{remote: "not an address", want: "invalid IP"},
	}
	for _, tt := range tests {
		t.Run(tt.remote, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/mcp", nil)
			r.RemoteAddr = tt.remote
			if got := session.PeerOf(r); got.Addr.String() != tt.want || got.UID != -1 {
				t.Errorf("session.PeerOf(%s) = %v, want %s without uid (no such socket)", tt.remote, got, tt.want)
			}
		})
	}
}

// TestBufferedBodies: request bodies held at once are bounded all together;
// a request that finds no room within the body timeout gets 503, and a body
// stops counting once the SDK has read it.
func TestBufferedBodies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		opts := Options{MaxRequestBytes: 4096, MaxBufferedBytes: 8192, BodyTimeout: time.Second}
		opts.setDefaults()
		m := &mcpEndpoint{opts: opts, buffered: semaphore.NewWeighted(opts.MaxBufferedBytes)}
		post := func(body io.Reader) (*httptest.ResponseRecorder, *http.Request, func(), bool) {
			r := httptest.NewRequest(http.MethodPost, "/mcp", body)
			w := httptest.NewRecorder()
			release, ok := m.readBody(w, r)
			return w, r, release, ok
		}
		body := strings.Repeat("x", 4096)

		// Two bodies of the limit fill the budget; the SDK has not read them.
		_, _, release1, ok1 := post(strings.NewReader(body))
		_, r2, _, ok2 := post(strings.NewReader(body))
		if !ok1 || !ok2 {
			t.Fatalf("bodies within the budget refused: %v, %v", ok1, ok2)
		}
		w, _, _, ok := post(strings.NewReader("{}"))
		if ok || w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "too many request bodies") {
			t.Fatalf("a body beyond the budget: ok %v, status %d, body %s; want 503", ok, w.Code, w.Body)
		}

		// The SDK reading one to the end frees its room; so does release.
		if got, err := io.ReadAll(r2.Body); err != nil || string(got) != body {
			t.Fatalf("held body read back %d bytes, %v", len(got), err)
		}
		release1()
		if !m.buffered.TryAcquire(opts.MaxBufferedBytes) {
			t.Fatal("budget not given back after the bodies were read and released")
		}
		m.buffered.Release(opts.MaxBufferedBytes)

		// Refused bodies give their room back too.
		for range 3 {
			w, _, _, ok := post(io.MultiReader(strings.NewReader(body + "x")))
			if ok || w.Code != http.StatusRequestEntityTooLarge {
				t.Fatalf("oversized chunked body: ok %v, status %d", ok, w.Code)
			}
		}
		if !m.buffered.TryAcquire(opts.MaxBufferedBytes) {
			t.Fatal("budget not given back after 413s")
		}
	})
}

// TestReadAllSized: a body reads whole whatever its declared size says,
// and a read error comes back with what was read before it.
func TestReadAllSized(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789"), 10_000)
	for _, size := range []int64{-1, 0, 1, 511, 512, int64(len(body)) - 1, int64(len(body)), int64(len(body)) + 1, 4 * int64(len(body))} {
		got, err := readAllSized(iotest.OneByteReader(bytes.NewReader(body[:len(body)/7])), size)
		if err != nil || !bytes.Equal(got, body[:len(body)/7]) {
			t.Errorf("size %d, one byte at a time: %d bytes, %v", size, len(got), err)
		}
		got, err = readAllSized(bytes.NewReader(body), size)
		if err != nil || !bytes.Equal(got, body) {
			t.Errorf("size %d: %d bytes, %v", size, len(got), err)
		}
	}
	got, err := readAllSized(iotest.TimeoutReader(bytes.NewReader(body)), int64(len(body)))
	if !errors.Is(err, iotest.ErrTimeout) || !bytes.Equal(got, body[:len(got)]) || len(got) == 0 {
		t.Errorf("a failing read: %d bytes, %v; want what came before the error and the error", len(got), err)
	}
}

func TestBodyModern(t *testing.T) {
	tests := []struct {
		body         string
		modern, list bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, true, false},
		{`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, true, true},
		{` {"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01"}}}`, true, false},
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2026-07-28"}}`, false, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`, false, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":20260728}}}`, false, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":"2026-07-28"}}`, false, false},
		{`[{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}]`, false, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, false, false},
		{``, false, false},
	}
	for _, tc := range tests {
		if got := bodyModern([]byte(tc.body)); got != tc.modern {
			t.Errorf("bodyModern(%s) = %v, want %v", tc.body, got, tc.modern)
		}
		if got := isListen([]byte(tc.body)); got != tc.list {
			t.Errorf("isListen(%s) = %v, want %v", tc.body, got, tc.list)
		}
	}
}
