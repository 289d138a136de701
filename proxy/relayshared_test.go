package proxy

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/upstream/supervise"
)

// TestSoleCaller: the callers of a backend are counted as the relays of a
// shared process over HTTP count them (relay.go callerFor): a session once
// however many requests it has in flight, and each request without a
// session (a 2026-07-28 call on the lean path) as a caller of its own; a
// caller whose requests have all ended has no call to relay on.
func TestSoleCaller(t *testing.T) {
	a, b := &mcp.ServerSession{}, &mcp.ServerSession{}
	live := t.Context()
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	type req struct {
		ss  *mcp.ServerSession
		ctx context.Context
	}
	for _, tt := range []struct {
		name     string
		reqs     []req
		wantN    int
		wantSS   *mcp.ServerSession
		wantCall bool
	}{
		{name: "none", wantN: 0},
		{name: "one session", reqs: []req{{a, live}}, wantN: 1, wantSS: a, wantCall: true},
		{name: "one session, two requests", reqs: []req{{a, ended}, {a, live}}, wantN: 1, wantSS: a, wantCall: true},
		{name: "one session, requests ended", reqs: []req{{a, ended}}, wantN: 1, wantSS: a},
		{name: "two sessions", reqs: []req{{a, live}, {b, live}}, wantN: 2},
		{name: "a session and a request without one", reqs: []req{{a, live}, {nil, live}}, wantN: 2},
		{name: "two requests without a session", reqs: []req{{nil, live}, {nil, live}}, wantN: 2},
		{name: "one request without a session", reqs: []req{{nil, live}}, wantN: 1, wantCall: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			be := &backend{Backend: &supervise.Backend{}}
			for _, r := range tt.reqs {
				defer be.Enter(r.ctx, r.ss)()
			}
			n, ss, call := be.SoleCaller()
			if n != tt.wantN || ss != tt.wantSS || (call != nil) != tt.wantCall {
				t.Errorf("soleCaller() = %d, %p, call %v; want %d, %p, call %v", n, ss, call != nil, tt.wantN, tt.wantSS, tt.wantCall)
			}
			if got := len(be.BusySessions()); got != tt.wantN {
				t.Errorf("busySessions() has %d callers, want %d", got, tt.wantN)
			}
		})
	}
}
