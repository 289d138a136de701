package streamable

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/manifold-mcp/manifold/proxy/internal/wire"
)

// publishRelay is an AnswerRelay that records what is published and fails
// with err.
type publishRelay struct {
	mu        sync.Mutex
	published []string // "replica session msg"; guarded by mu
	err       error
}

func (pr *publishRelay) Replica() string { return "aaaa" }

func (pr *publishRelay) PublishAnswer(_ context.Context, replica, session string, msg []byte) error {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.err != nil {
		return pr.err
	}
	pr.published = append(pr.published, replica+" "+session+" "+string(msg))
	return nil
}

func (pr *publishRelay) ListenAnswers(context.Context, func(string, []byte)) {}

// errSharedUnavailable stands for the root's ErrSharedUnavailable, which a
// relay's error wraps when the shared store cannot be reached.
var errSharedUnavailable = errors.New("the shared store is unavailable")

// TestRelayAnswers: a POST whose answers all belong to another replica is
// published with the session and answered 202; one of this replica's gets
// its id back and goes on to the SDK; the relay down or the replica gone
// is 503 with Retry-After: 1, the outage logged once.
func TestRelayAnswers(t *testing.T) {
	other := `{"jsonrpc":"2.0","id":` + string(wire.TagID("bbbb", []byte("7"))) + `,"result":{"action":"accept"}}`
	mine := `{"jsonrpc":"2.0","id":` + string(wire.TagID("aaaa", []byte("7"))) + `,"result":{}}`
	tests := []struct {
		name, body string
		err        error
		served     bool   // relayAnswers answered the request
		code       int    // its status, if it did
		say        string // in its body
		sdkBody    string // what the SDK is handed, if it did not
		published  []string
	}{
		{name: "another replica's", body: other, served: true, code: http.StatusAccepted,
			published: []string{`bbbb S1 {"jsonrpc":"2.0","id":7,"result":{"action":"accept"}}`}},
		{name: "this replica's", body: mine, sdkBody: `{"jsonrpc":"2.0","id":7,"result":{}}`},
		{name: "no tagged id", body: `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`, sdkBody: `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`},
		{name: "replica gone", body: other, err: ErrNoReplica, served: true, code: http.StatusServiceUnavailable, say: "does not listen"},
		{name: "redis down", body: other, err: fmt.Errorf("%w: Redis at x: refused", errSharedUnavailable), served: true, code: http.StatusServiceUnavailable, say: "cannot be reached; retry shortly"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			relay := &publishRelay{err: tt.err}
			logs := &strings.Builder{}
			core := newFakeCore()
			core.answers, core.log = relay, slog.New(slog.NewTextHandler(logs, nil))
			m := &mcpEndpoint{core: core}
			var served bool
			var rec *httptest.ResponseRecorder
			var sdkBody string
			for range 2 {
				r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
				r.Body = &heldBody{data: []byte(tt.body), release: func() {}}
				rec = httptest.NewRecorder()
				served = m.relayAnswers(rec, r, "S1")
				sdkBody = string(r.Body.(*heldBody).data)
			}
			if served != tt.served {
				t.Fatalf("relayAnswers answered the request: %v, want %v", served, tt.served)
			}
			if !served {
				if sdkBody != tt.sdkBody {
					t.Errorf("handed to the SDK: %s, want %s", sdkBody, tt.sdkBody)
				}
				return
			}
			if rec.Code != tt.code || !strings.Contains(rec.Body.String(), tt.say) {
				t.Errorf("answered %d %s, want %d saying %q", rec.Code, rec.Body, tt.code, tt.say)
			}
			if tt.code == http.StatusServiceUnavailable && rec.Header().Get("Retry-After") != "1" {
				t.Errorf("Retry-After %q, want 1", rec.Header().Get("Retry-After"))
			}
			if tt.published != nil && (len(relay.published) != 2 || relay.published[0] != tt.published[0]) {
				t.Errorf("published %q, want %q twice", relay.published, tt.published)
			}
			if n := strings.Count(logs.String(), "could not be relayed"); tt.name == "redis down" && n != 1 {
				t.Errorf("the outage was logged %d times over two answers, want once:\n%s", n, logs)
			}
		})
	}
}
