package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/manifold-mcp/manifold/proxy/era"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/proxy/session"
	"github.com/manifold-mcp/manifold/upstream"
)

// TestToolsListPrepared: a tools/list is answered from bytes prepared once
// per view, the same bytes every time, equal (decoded) to the list the
// typed path makes, for each protocol version; and a new policy makes a
// new list.
func TestToolsListPrepared(t *testing.T) {
	for _, version := range []string{"2025-03-26", "2025-11-25", era.Version} {
		t.Run(version, func(t *testing.T) {
			s := startedServer(t, Options{Servers: []ServerConfig{{Upstream: upstream.Options{Name: "lean", Dial: leanUpstream(t)}, Prefix: "lean"}}})
			var types []string
			var mu sync.Mutex
			s.server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
					res, err := next(ctx, method, req)
					if method == "tools/list" && err == nil {
						mu.Lock()
						types = append(types, fmt.Sprintf("%T", res))
						mu.Unlock()
					}
					return res, err
				}
			})
			v := version
			if v == era.Version {
				v = "" // no initialize: the era is in every request's _meta
			}
			rs := openRawVersion(t, s, v)
			list := `{"jsonrpc":"2.0","id":ID,"method":"tools/list"}`
			if v == "" {
				list = `{"jsonrpc":"2.0","id":ID,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"` + era.Version +
					`","io.modelcontextprotocol/clientCapabilities":{}}}}`
			}
			get := func(id int) []byte {
				t.Helper()
				rs.send(strings.Replace(list, "ID", fmt.Sprint(id), 1))
				for line := range rs.lines {
					if bytes.HasPrefix(line, []byte(`{"jsonrpc":"2.0","id":`+fmt.Sprint(id)+`,`)) {
						var m struct{ Result json.RawMessage }
						if err := json.Unmarshal(line, &m); err != nil || m.Result == nil {
							t.Fatalf("tools/list answer %s: %v", line, err)
						}
						return m.Result
					}
				}
				t.Fatal("the proxy ended before answering tools/list")
				return nil
			}
			first, second := get(1), get(2)
			if !bytes.Equal(first, second) {
				t.Errorf("two lists of one view differ:\n%s\n%s", first, second)
			}
			if !bytes.Contains(first, []byte(`"lean__echo"`)) {
				t.Errorf("list without lean__echo: %s", first)
			}
			mu.Lock()
			got := slices.Clone(types)
			mu.Unlock()
			// The first list is the SDK's, which prepares it; the
			// second is served from it on the lean path (listlean.go).
			if want := []string{"*proxy.rawToolList"}; !cmp.Equal(got, want) {
				t.Errorf("lists the SDK answered, as %v, want %v", got, want)
			}
			// The typed list of the same request, made by the
			// SDK's own handler, decodes to the same value.
			s.typed = true
			typed := get(3)
			s.typed = false
			var a, b any
			if err := json.Unmarshal(first, &a); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(typed, &b); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(b, a); diff != "" {
				t.Errorf("prepared list, typed (-) vs prepared (+):\n%s", diff)
			}

			// A new policy: a new catalog, a new list.
			s.SetPolicy(&policy.Rules{Servers: map[string]*policy.ServerRules{"lean": {
				Tools: policy.List{Deny: []policy.Pattern{{Glob: "echo", Source: "test:1"}}}}}})
			if after := get(4); bytes.Contains(after, []byte(`"lean__echo"`)) || !bytes.Contains(after, []byte(`"lean__big"`)) {
				t.Errorf("list after the policy denied echo: %s", after)
			}
		})
	}
}

// TestToolsListPreparedPerView: with a rule for one identity, each identity
// gets its own prepared list, alternating, over HTTP with authentication.
func TestToolsListPreparedPerView(t *testing.T) {
	alice, err := policy.ParsePrincipal("user:alice")
	if err != nil {
		t.Fatal(err)
	}
	rules := &policy.Rules{TableRules: []policy.Rule{{Name: "no-big", Match: "lean__big", Deny: true, Who: []policy.Principal{alice}, Source: "test:1"}}}
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		return &auth.TokenInfo{UserID: "jwt:test " + token, Expiration: time.Now().Add(time.Hour),
			Extra: map[string]any{session.ExtraSubject: token, session.ExtraMethod: "jwt"}}, nil
	}
	url := serveLeanHTTP(t, false, Options{Policy: rules}, HTTPOptions{Authenticate: auth.RequireBearerToken(verify, nil)}, nil)
	clients := map[string]*mcp.ClientSession{}
	for _, who := range []string{"alice", "bob"} {
		hc := &http.Client{Timeout: 20 * time.Second, Transport: bearer{who}}
		c := mcp.NewClient(&mcp.Implementation{Name: "view-" + who, Version: "0"}, nil)
		cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		clients[who] = cs
	}
	for range 2 {
		for who, wantBig := range map[string]bool{"alice": false, "bob": true} {
			res, err := clients[who].ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.ContainsFunc(res.Tools, func(tl *mcp.Tool) bool { return tl.Name == "lean__big" }); got != wantBig {
				t.Errorf("%s sees lean__big: %v, want %v", who, got, wantBig)
			}
		}
	}
}

// bearer is an http.RoundTripper that sends a bearer token.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// BenchmarkToolsList1000 lists a catalog of 1,000 tools from 20 in-memory
// upstreams (each tool with a small input schema) over stdio, from prepared
// bytes and the typed way.
func BenchmarkToolsList1000(b *testing.B) {
	var servers []ServerConfig
	for i := range 20 {
		srv := mcp.NewServer(&mcp.Implementation{Name: fmt.Sprint("u", i), Version: "0"}, nil)
		for j := range 50 {
			srv.AddTool(&mcp.Tool{Name: fmt.Sprintf("tool_%d", j), Description: "Does thing " + fmt.Sprint(j) + " of the many things this server does.",
				InputSchema: map[string]any{"type": "object", "properties": map[string]any{"query": map[string]any{"type": "string", "description": "what to look for"}}, "required": []string{"query"}}},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{}, nil
				})
		}
		servers = append(servers, ServerConfig{Upstream: upstream.Options{Name: fmt.Sprint("u", i), Dial: dialMemory(b, srv)}, Prefix: fmt.Sprint("u", i)})
	}
	for _, path := range []string{"prepared", "typed"} {
		b.Run(path, func(b *testing.B) {
			s := startedServer(b, Options{Servers: servers})
			s.typed = path == "typed"
			cr, pw := io.Pipe()
			pr, cw := io.Pipe()
			go func() { _ = s.ServeStdio(b.Context(), pr, pw); pw.Close() }()
			b.Cleanup(func() { cw.Close() })
			br := bufio.NewReaderSize(cr, 1<<20)
			// A raw client: what is measured is the proxy's side.
			ask := func(line string) []byte {
				if _, err := io.WriteString(cw, line+"\n"); err != nil {
					b.Fatal(err)
				}
				out, err := br.ReadBytes('\n')
				if err != nil {
					b.Fatal(err)
				}
				return out
			}
			ask(initLine)
			if _, err := io.WriteString(cw, initializedLine+"\n"); err != nil {
				b.Fatal(err)
			}
			const list = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
			if n := bytes.Count(ask(list), []byte(`"name":"u`)); n != 1000 {
				b.Fatalf("tools/list: %d tools, want 1000", n)
			}
			b.ReportAllocs()
			for b.Loop() {
				ask(list)
			}
		})
	}
}
