package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/manifold-mcp/manifold/proxy/era"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/upstream"
)

// leanUpstream is an in-memory upstream for the lean-path tests: echo
// answers its text, link a resource link to one of its own resources (and
// one of another scheme), big a text longer than the test's cap, structured
// structured content, secret is denied by the policy and limited is rate
// limited.
func leanUpstream(t testing.TB) func(context.Context) (mcp.Transport, error) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "lean", Version: "0"}, nil)
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	schema := map[string]any{"type": "object"}
	add := func(name string, h func(*mcp.CallToolRequest) *mcp.CallToolResult) {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: schema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return h(req), nil
		})
	}
	add("echo", func(req *mcp.CallToolRequest) *mcp.CallToolResult {
		return text("echo " + string(req.Params.Arguments))
	})
	add("link", func(*mcp.CallToolRequest) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.ResourceLink{URI: "mem://doc/a", Name: "a"},
			&mcp.ResourceLink{URI: "mem://hidden/b", Name: "b"},
		}}
	})
	add("big", func(*mcp.CallToolRequest) *mcp.CallToolResult { return text(strings.Repeat("x", 500)) })
	add("structured", func(*mcp.CallToolRequest) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "{}"}}, StructuredContent: map[string]any{"n": 1.5}}
	})
	add("failing", func(*mcp.CallToolRequest) *mcp.CallToolResult {
		r := text("it failed")
		r.IsError = true
		return r
	})
	add("secret", func(*mcp.CallToolRequest) *mcp.CallToolResult { return text("ran") })
	add("limited", func(*mcp.CallToolRequest) *mcp.CallToolResult { return text("ran") })
	srv.AddResource(&mcp.Resource{URI: "mem://doc/a", Name: "a"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "mem://doc/a", Text: "a"}}}, nil
	})
	return dialMemory(t, srv)
}

// dialMemory returns an upstream Dial that connects to srv in memory.
func dialMemory(t testing.TB, srv *mcp.Server) func(context.Context) (mcp.Transport, error) {
	return inMemoryDial(t, srv)
}

// serveLean starts a proxy of opts in front of leanUpstream, with tools/call
// answered on the typed path if typed, serves its HTTP face on loopback and
// returns the /mcp URL.
func serveLean(tb testing.TB, typed bool, opts Options, prepare func(*Server)) string {
	tb.Helper()
	return serveLeanHTTP(tb, typed, opts, HTTPOptions{}, prepare)
}

// serveLeanHTTP is serveLean with the HTTP face's options hopts.
func serveLeanHTTP(tb testing.TB, typed bool, opts Options, hopts HTTPOptions, prepare func(*Server)) string {
	tb.Helper()
	opts.Servers = []ServerConfig{{Upstream: upstream.Options{Name: "lean", Dial: leanUpstream(tb)}, Prefix: "lean"}}
	s, err := New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	s.typed = typed
	if prepare != nil {
		prepare(s)
	}
	return startHTTP(tb, s, hopts)
}

// startHTTP starts s, waits until it is ready and serves its HTTP face
// with hopts on loopback until the test ends; it returns the MCP endpoint.
func startHTTP(tb testing.TB, s *Server, hopts HTTPOptions) string {
	tb.Helper()
	tb.Cleanup(func() { _ = s.Close() })
	if err := s.Start(tb.Context()); err != nil {
		tb.Fatal(err)
	}
	<-s.Ready()
	hs := httptest.NewServer(s.HTTPHandler(hopts))
	tb.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

// leanPolicy denies lean__secret, caps lean__big's result, rate-limits
// lean__limited to one call a minute and hides the resource mem://hidden/*.
func leanPolicy() *policy.Rules {
	return &policy.Rules{
		Servers: map[string]*policy.ServerRules{"lean": {
			Tools:     policy.List{Deny: []policy.Pattern{{Glob: "secret", Source: "test:1"}}},
			Resources: policy.List{Deny: []policy.Pattern{{Glob: "mem://hidden/*", Source: "test:2"}}},
		}},
		TableRules: []policy.Rule{
			{Name: "cap", Match: "lean__big", Allow: true, MaxResultBytes: 100, Source: "test:3"},
			{Name: "slow", Match: "lean__limited", Allow: true, Rate: policy.Rate{N: 1, Per: time.Minute}, Source: "test:4"},
		},
	}
}

// TestHTTPLeanCallLikeTyped runs the same tools/call requests over HTTP
// through the lean path (the upstream's result bytes answered as they are)
// and through the typed one (decoded and encoded again by the SDK), for a
// client of each era, and requires the same results, errors and audit
// lines: policy (a denied tool, an unknown one), limits (a capped result, a
// rate limit), URI rewriting and withholding, structured content and tool
// errors. It also checks which path answered.
func TestHTTPLeanCallLikeTyped(t *testing.T) {
	calls := []string{"echo", "link", "big", "structured", "failing", "secret", "nosuch", "limited", "limited"}
	for _, version := range []string{"2025-03-26", "2025-11-25", era.Version, "2025-11-25+caps", era.Version + "+caps"} {
		t.Run(version, func(t *testing.T) {
			// +caps: the client declares sampling and elicitation, which
			// the server (shared, of the initialize era) may ask for.
			version, caps := strings.CutSuffix(version, "+caps")
			got := map[bool]leanRun{}
			for _, typed := range []bool{false, true} {
				got[typed] = runLeanCalls(t, typed, version, caps, calls)
			}
			if diff := cmp.Diff(got[true].answers, got[false].answers); diff != "" {
				t.Errorf("answers, typed (-) vs lean (+):\n%s", diff)
			}
			if diff := cmp.Diff(got[true].audit, got[false].audit); diff != "" {
				t.Errorf("audit lines, typed (-) vs lean (+):\n%s", diff)
			}
			for typed, want := range map[bool]string{false: "*proxy.rawCallResult", true: "*mcp.CallToolResult"} {
				for _, ty := range got[typed].types {
					if ty != want {
						t.Errorf("typed=%v: a call was answered with a %s, want %s (types: %v)", typed, ty, want, got[typed].types)
						break
					}
				}
			}
			switch {
			case len(got[true].types) == 0:
				t.Error("typed: no call was answered by the SDK")
			case caps && len(got[false].types) == 0:
				// A client that declared sampling and elicitation may be
				// asked during its calls (relay.go callerFor), on the
				// call's stream: the SDK's.
				t.Error("lean: with sampling and elicitation declared, no call went through the SDK, want them all there")
			case !caps && len(got[false].types) != 0:
				// An initialize-era session's calls never reach the SDK
				// (proxy/serve/streamable call.go), nor do a 2026-07-28 client's calls of a
				// shared server (here one of the initialize era, reached
				// through Dial: the bridge; serveLeanModern).
				t.Errorf("lean: %d calls went through the SDK, want none", len(got[false].types))
			}
		})
	}
}

var retryIn = regexp.MustCompile(`Retry in [0-9.mhs]+`)

// leanRun is what one client saw of its calls, and the audit lines.
type leanRun struct {
	answers []string
	audit   []map[string]any
	types   []string // the result types the SDK encoded
}

func runLeanCalls(t *testing.T, typed bool, version string, caps bool, calls []string) leanRun {
	t.Helper()
	audit := &syncBuffer{b: new(bytes.Buffer)}
	var run leanRun
	var mu sync.Mutex
	url := serveLean(t, typed, Options{Policy: leanPolicy(), Audit: audit}, func(s *Server) {
		s.server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				res, err := next(ctx, method, req)
				if method == "tools/call" && err == nil {
					mu.Lock()
					run.types = append(run.types, fmt.Sprintf("%T", res))
					mu.Unlock()
				}
				return res, err
			}
		})
	})
	var opts *mcp.ClientOptions
	if caps { // declared by having handlers
		opts = &mcp.ClientOptions{
			//lint:ignore SA1019 clients of the initialize era still declare sampling (VS Code does)
			CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				return nil, fmt.Errorf("not asked in this test")
			},
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "decline"}, nil
			},
		}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "lean-test", Version: "0"}, opts)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Timeout: 20 * time.Second}},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	for _, name := range calls {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "lean__" + name, Arguments: map[string]any{"q": name}})
		if err != nil {
			run.answers = append(run.answers, name+": error "+err.Error())
			continue
		}
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		// The wait a rate limit names depends on the clock.
		run.answers = append(run.answers, name+": "+retryIn.ReplaceAllString(string(b), "Retry in T"))
	}
	for line := range bytes.SplitSeq(bytes.TrimSpace(audit.bytes()), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		if m["method"] != "tools/call" {
			continue
		}
		delete(m, "time")
		delete(m, "duration_ms")
		delete(m, "session")
		if m["outcome"] == "rate limited" {
			delete(m, "result_bytes") // the wait in the text depends on the clock
		}
		run.audit = append(run.audit, m)
	}
	if len(run.audit) != len(calls) {
		t.Errorf("%d audit lines of tools/call for %d calls", len(run.audit), len(calls))
	}
	return run
}

// BenchmarkHTTPCall is one tools/call over HTTP, in process (an in-memory
// upstream, the HTTP face on loopback, a go-sdk client), answered by the
// lean path and by the typed one, for a client of each era, with a result
// of 4 KiB of text: allocations per call, which do not depend on the
// machine's load, are the before/after figure of the path.
func BenchmarkHTTPCall(b *testing.B) {
	for _, version := range []string{"2025-11-25", era.Version} {
		for _, path := range []string{"lean", "typed"} {
			b.Run(version+"/"+path, func(b *testing.B) {
				url := serveLean(b, path == "typed", Options{}, nil)
				c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, nil)
				cs, err := c.Connect(b.Context(), &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: version})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = cs.Close() })
				params := &mcp.CallToolParams{Name: "lean__echo", Arguments: map[string]string{"text": strings.Repeat("y", 4096)}}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := cs.CallTool(b.Context(), params); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
