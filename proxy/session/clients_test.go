package session

import (
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestClientsModern: a modern client is kept by what it names itself,
// its last mode wins, and at most maxModernClients are kept.
func TestClientsModern(t *testing.T) {
	var r Clients
	calls := 0
	caps := func() []string { calls++; return []string{"sampling"} }
	a := Client{Name: "a", Modern: true, Protocol: "2026-07-28"}
	if r.Record(nil, a, "full", true, caps) {
		t.Error("a modern client is not a session to forget")
	}
	r.Record(nil, a, "search", true, caps)
	var got []ClientEntry
	r.Each(func(e *ClientEntry, modern bool) {
		if !modern {
			t.Errorf("%v listed as a session", e.ID)
		}
		got = append(got, *e)
	})
	if len(got) != 1 || got[0].Mode != "search" || got[0].Caps[0] != "sampling" || calls != 1 {
		t.Errorf("got %+v after %d caps calls, want a in search mode, caps asked once", got, calls)
	}
	for i := range 2 * maxModernClients {
		r.Record(nil, Client{Name: fmt.Sprint("c", i), Modern: true}, "full", true, caps)
	}
	n := 0
	r.Each(func(*ClientEntry, bool) { n++ })
	if n != maxModernClients {
		t.Errorf("%d modern clients kept, want %d", n, maxModernClients)
	}
}

// TestClientsLegacy: a legacy session keeps its first final mode until
// it is forgotten.
func TestClientsLegacy(t *testing.T) {
	var r Clients
	ss := new(mcp.ServerSession)
	caps := func() []string { return nil }
	if !r.Record(ss, Client{Name: "l"}, "full", false, caps) {
		t.Fatal("a new session is not reported new")
	}
	if _, ok := r.ModeOf(ss); ok {
		t.Error("a mode decided before the start was over is kept")
	}
	if r.Record(ss, Client{Name: "l"}, "search", true, caps) {
		t.Error("a known session is reported new")
	}
	r.Record(ss, Client{Name: "l"}, "full", true, caps)
	if mode, ok := r.ModeOf(ss); !ok || mode != "search" {
		t.Errorf("ModeOf = %q, %v; want search, kept", mode, ok)
	}
	r.Forget(ss)
	if _, ok := r.ModeOf(ss); ok {
		t.Error("a forgotten session keeps its mode")
	}
}

// TestKeptMode: a legacy session keeps the final mode it was given; a modern
// request's client, or a request without a session, is decided anew.
func TestKeptMode(t *testing.T) {
	var r Clients
	ss := new(mcp.ServerSession)
	legacy := Client{Name: "a", Protocol: "2025-11-25"}
	if _, ok := r.KeptMode(ss, legacy); ok {
		t.Error("a mode kept before any was recorded")
	}
	r.Record(ss, legacy, "search", true, func() []string { return nil })
	if mode, ok := r.KeptMode(ss, legacy); !ok || mode != "search" {
		t.Errorf("KeptMode = %q, %v; want search, true", mode, ok)
	}
	if _, ok := r.KeptMode(ss, Client{Name: "a", Modern: true}); ok {
		t.Error("a modern request on the session got the session's mode")
	}
	if _, ok := r.KeptMode(nil, legacy); ok {
		t.Error("a request without a session got a kept mode")
	}
}
