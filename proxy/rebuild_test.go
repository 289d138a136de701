package proxy

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/upstream"
)

// The tests of this file check that a rebuild does work in proportion to
// what changed without changing what it builds: after any sequence of
// arrivals, re-listings, policy and lock changes, the catalog, the SDK's
// registry and what a client lists are what one rebuild of a fresh proxy
// from the same lists gives, and a client is told of a change exactly when
// its list changed.

// offlineServer is a proxy whose servers are never started (Start is not
// called): a test gives each backend its lists, as its start or a
// re-listing would (setLists).
func offlineServer(t testing.TB, opts Options) *Server {
	t.Helper()
	for i := range opts.Servers {
		opts.Servers[i].Upstream.Dial = func(context.Context) (mcp.Transport, error) { return nil, errors.New("not started") }
	}
	opts.FirstListWait = time.Millisecond
	opts.FirstListTimeout = time.Millisecond
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// putLists gives server name the lists l, as its start or a re-listing
// does, without rebuilding.
func putLists(t testing.TB, s *Server, name string, l lists) {
	t.Helper()
	for _, b := range s.gen.Load().backends {
		if b.name == name {
			b.mu.Lock()
			b.lists, b.listed, b.state = l, true, stateUp
			b.mu.Unlock()
			return
		}
	}
	t.Fatalf("no server %q", name)
}

// connectClient connects a client to s's MCP server in memory; changed
// counts the tools/list_changed notifications it gets.
func connectClient(t testing.TB, s *Server, changed *atomic.Int64) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.server.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	opts := &mcp.ClientOptions{}
	if changed != nil {
		opts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) { changed.Add(1) }
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, opts).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// tool is a tool definition of the tests, with an input schema of one
// property.
func tool(name, description string) *mcp.Tool {
	return &mcp.Tool{Name: name, Description: description, InputSchema: map[string]any{
		"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}}
}

// relisted returns copies of l's definitions, equal in value: what a
// re-listing of an unchanged server gives.
func relisted(l lists) lists {
	var out lists
	for _, t := range l.tools {
		c := *t
		out.tools = append(out.tools, &c)
	}
	for _, p := range l.prompts {
		c := *p
		out.prompts = append(out.prompts, &c)
	}
	for _, r := range l.resources {
		c := *r
		out.resources = append(out.resources, &c)
	}
	for _, tm := range l.templates {
		c := *tm
		out.templates = append(out.templates, &c)
	}
	return out
}

// TestRebuildCoalesces: rebuild requests made while a rebuild runs are all
// served by one more rebuild, and each returns only once a rebuild that
// began after it was asked for has finished.
func TestRebuildCoalesces(t *testing.T) {
	s := offlineServer(t, Options{Servers: []ServerConfig{{Upstream: upstream.Options{Name: "a"}, Prefix: "a"}}})
	s.rebuild()
	before := s.regGen.Load() // one per rebuild (register)

	s.catMu.Lock() // the first rebuild below waits here, running
	var wg sync.WaitGroup
	wg.Go(s.rebuild)
	waitUntil(t, func() bool {
		s.rebuilds.mu.Lock()
		defer s.rebuilds.mu.Unlock()
		return s.rebuilds.running
	})
	// The server arrives while that rebuild runs, after it read the lists
	// (it holds catMu): the requests made now must see it.
	putLists(t, s, "a", lists{tools: []*mcp.Tool{tool("t", "A.")}})
	const n = 8
	var missing atomic.Int64
	for range n {
		wg.Go(func() {
			s.rebuild()
			if _, ok := s.catalog.Load().toolDefs["a__t"]; !ok {
				missing.Add(1)
			}
		})
	}
	waitUntil(t, func() bool {
		s.rebuilds.mu.Lock()
		defer s.rebuilds.mu.Unlock()
		return s.rebuilds.asked == s.rebuilds.done+n+1
	})
	s.catMu.Unlock()
	wg.Wait()
	if got := s.regGen.Load() - before; got != 2 {
		t.Errorf("%d rebuilds for 1 + %d requests made while one ran; want 2", got, n)
	}
	if missing.Load() != 0 {
		t.Errorf("%d rebuild calls returned before a catalog with the change was in place", missing.Load())
	}
}

// TestRebuildListChanged: a client that listed is told of a tools change
// exactly when its list changed: not for a re-listing of the same values,
// a rules change that changes no definition, or an arrival of a server
// with nothing visible; once for a changed definition, an arrival, a
// removal, and once for a burst of arrivals.
func TestRebuildListChanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		servers := []ServerConfig{
			{Upstream: upstream.Options{Name: "a"}, Prefix: "a"},
			{Upstream: upstream.Options{Name: "b"}, Prefix: "b"},
			{Upstream: upstream.Options{Name: "c"}, Prefix: "c"},
			{Upstream: upstream.Options{Name: "d"}, Prefix: "d"},
			{Upstream: upstream.Options{Name: "e"}, Prefix: "e"},
		}
		hideE := &policy.Rules{Servers: map[string]*policy.ServerRules{"e": {Tools: policy.List{Deny: []policy.Pattern{{Glob: "*"}}}}}}
		s, err := New(Options{Servers: servers, Policy: hideE, FirstListWait: time.Millisecond, FirstListTimeout: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var changed atomic.Int64
		cs := connectClient(t, s, &changed)
		a := lists{tools: []*mcp.Tool{tool("t", "A."), tool("u", "U.")}}
		putLists(t, s, "a", a)
		s.rebuild()
		if _, err := cs.ListTools(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		settle := func() int64 {
			time.Sleep(2 * time.Second)
			synctest.Wait()
			return changed.Swap(0)
		}
		settle()
		steps := []struct {
			name string
			do   func()
			want int64
		}{
			{"a re-lists the same values", func() { putLists(t, s, "a", relisted(a)); s.rebuild() }, 0},
			{"rules that change no visible tool", func() {
				s.SetPolicy(&policy.Rules{Servers: map[string]*policy.ServerRules{"e": {Tools: policy.List{Deny: []policy.Pattern{{Glob: "*"}}}},
					"b": {Tools: policy.List{Deny: []policy.Pattern{{Glob: "nothing-of-b"}}}}}})
			}, 0},
			{"e arrives, all of it hidden", func() { putLists(t, s, "e", lists{tools: []*mcp.Tool{tool("t", "E.")}}); s.rebuild() }, 0},
			{"a changes a description", func() {
				a = lists{tools: []*mcp.Tool{tool("t", "A, changed."), a.tools[1]}}
				putLists(t, s, "a", a)
				s.rebuild()
			}, 1},
			{"b arrives", func() { putLists(t, s, "b", lists{tools: []*mcp.Tool{tool("t", "B.")}}); s.rebuild() }, 1},
			{"c and d arrive in a burst", func() {
				putLists(t, s, "c", lists{tools: []*mcp.Tool{tool("t", "C.")}})
				s.rebuild()
				putLists(t, s, "d", lists{tools: []*mcp.Tool{tool("t", "D.")}})
				s.rebuild()
			}, 1},
			{"a drops u", func() { putLists(t, s, "a", lists{tools: a.tools[:1]}); s.rebuild() }, 1},
		}
		for _, st := range steps {
			st.do()
			if got := settle(); got != st.want {
				t.Errorf("%s: %d tools/list_changed, want %d", st.name, got, st.want)
			}
		}
		_ = cs.Close()
	})
}
