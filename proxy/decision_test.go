package proxy

import (
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/upstream"
)

// recordingServer is an in-memory upstream that records every request it
// receives.
type recordingServer struct {
	mu      sync.Mutex
	methods []string
}

func (r *recordingServer) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.methods)
}

func (r *recordingServer) dial(t testing.TB) func(ctx context.Context) (mcp.Transport, error) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "rec", Version: "0"}, &mcp.ServerOptions{
		CompletionHandler: func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{"x"}}}, nil
		},
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			r.mu.Lock()
			r.methods = append(r.methods, method)
			r.mu.Unlock()
			return next(ctx, method, req)
		}
	})
	srv.AddTool(&mcp.Tool{Name: "secret_tool", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran"}}}, nil
		})
	srv.AddPrompt(&mcp.Prompt{Name: "secret_prompt"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "p"}}}}, nil
	})
	srv.AddResource(&mcp.Resource{URI: "rec://secret/a", Name: "a"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "rec://secret/a", Text: "a"}}}, nil
	})
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "rec://secret/{x}", Name: "t"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "t"}}}, nil
	})
	return inMemoryDial(t, srv)
}

// TestNoPathWithoutDecision: with a policy that denies everything of a
// server, no call, read, prompt get, completion or subscription reaches it —
// only the listings the proxy makes itself to learn the catalog.
func TestNoPathWithoutDecision(t *testing.T) {
	rec := &recordingServer{}
	deny := policy.List{Deny: []policy.Pattern{{Glob: "*", Source: "test"}}}
	s, err := New(Options{
		Servers: []ServerConfig{{Upstream: upstream.Options{Name: "rec", Dial: rec.dial(t)}, Prefix: "rec"}},
		Policy: &policy.Rules{Servers: map[string]*policy.ServerRules{
			"rec": {Tools: deny, Prompts: deny, Resources: deny},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	<-s.Ready()

	cr, pw := io.Pipe()
	pr, cw := io.Pipe()
	go func() { _ = s.ServeStdio(t.Context(), pr, pw); pw.Close() }()
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil)
	// A legacy client: a modern one's Subscribe opens subscriptions/listen
	// without waiting for its answer, so a refusal would not show here.
	cs, err := client.Connect(t.Context(), &mcp.IOTransport{Reader: cr, Writer: cw}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	before := rec.seen()

	if res, err := cs.ListTools(ctx, nil); err != nil || len(res.Tools) != 0 {
		t.Errorf("tools/list = %v, %v; want no tools", res, err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "rec__secret_tool", Arguments: json.RawMessage(`{}`)}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("call of a denied tool: %v, want unknown tool", err)
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "rec__secret_prompt"}); err == nil {
		t.Error("prompts/get of a denied prompt succeeded")
	}
	for _, uri := range []string{"rec+rec://secret/a", "rec+rec://secret/other"} {
		if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err == nil {
			t.Errorf("resources/read %s of a denied resource succeeded", uri)
		}
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err == nil {
			t.Errorf("resources/subscribe %s of a denied resource succeeded", uri)
		}
	}
	if _, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "rec__secret_prompt"},
		Argument: mcp.CompleteParamsArgument{Name: "a", Value: ""}}); err == nil {
		t.Error("completion/complete for a denied prompt succeeded")
	}
	if _, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "rec+rec://secret/{x}"},
		Argument: mcp.CompleteParamsArgument{Name: "x", Value: ""}}); err == nil {
		t.Error("completion/complete for a denied template succeeded")
	}
	after := rec.seen()[len(before):]
	for _, m := range after {
		if !strings.HasSuffix(m, "/list") {
			t.Errorf("upstream received %q although the policy denies everything; all it received: %v", m, after)
		}
	}

	// The same requests with no policy do reach it (so the test can fail).
	s.SetPolicy(nil)
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "rec__secret_tool", Arguments: json.RawMessage(`{}`)}); err != nil {
		t.Fatalf("call with no policy: %v", err)
	}
	if !slices.Contains(rec.seen(), "tools/call") {
		t.Errorf("upstream never received tools/call with no policy: %v", rec.seen())
	}
}

// TestExplainResourceSpellings: explain decides a resource URI on its
// canonical form, so every spelling of a denied URI is explained as hidden
// under the canonical URI, and a URI without one is an error saying why.
func TestExplainResourceSpellings(t *testing.T) {
	rec := &recordingServer{}
	s, err := New(Options{
		Servers: []ServerConfig{{Upstream: upstream.Options{Name: "rec", Dial: rec.dial(t)}, Prefix: "rec"}},
		Policy: &policy.Rules{Servers: map[string]*policy.ServerRules{
			"rec": {Resources: policy.List{Deny: []policy.Pattern{{Glob: "rec://secret/a", Source: "test:1"}}}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	<-s.Ready()
	for _, uri := range []string{"rec+rec://secret/a", "REC+Rec://SECRET/./a", "rec+rec://secret/x/../%61", "rec+rec://secret//a/"} {
		got, err := s.Explain(uri)
		if want := `resource rec+rec://secret/a (server "rec", original "rec://secret/a"): hidden: servers.rec.resources.deny "rec://secret/a" (test:1)`; err != nil || got != want {
			t.Errorf("Explain(%q) = %q, %v; want %q", uri, got, err, want)
		}
	}
	if got, err := s.Explain("rec+rec://secret/b"); err != nil || !strings.Contains(got, ": exposed") {
		t.Errorf("Explain(b) = %q, %v; want exposed", got, err)
	}
	if _, err := s.Explain("rec+rec://secret/a\x00"); err == nil || !strings.Contains(err.Error(), "cannot be canonicalised") {
		t.Errorf("Explain(NUL) error %v, want one saying it cannot be canonicalised", err)
	}
}
