//lint:file-ignore SA1019 sampling is deprecated as of protocol 2026-07-28, but Manifold serves clients on 2024-11-05 to 2025-11-25, for whom it is part of the protocol.

package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestIsolationPerSession: with isolation = "session", each HTTP client
// session gets a process of its own, so two clients whose sampling requests
// are in flight at the same time each get their own, which a shared process
// could not attribute. A shared server keeps one process for all.
func TestIsolationPerSession(t *testing.T) {
	t.Parallel()
	cfg := fixture("iso", []string{"-tools", "pid", "-extra", "sample"}, `isolation = "session"`) +
		fixture("shared", []string{"-tools", "pid"})
	hp := startHTTP(t, writeConfig(t, cfg))
	ctx := testCtx(t)

	// Both clients' sampling handlers wait until both have been asked, so
	// both calls are in flight together.
	var arrived sync.WaitGroup
	arrived.Add(2)
	both := make(chan struct{})
	go func() { arrived.Wait(); close(both) }()
	newClient := func(name string) *mcp.Client {
		return mcp.NewClient(&mcp.Implementation{Name: name, Version: "0"}, &mcp.ClientOptions{
			CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				arrived.Done()
				select {
				case <-both:
				case <-time.After(20 * time.Second):
				case <-ctx.Done():
				}
				return &mcp.CreateMessageResult{Role: "assistant", Model: "e2e", Content: &mcp.TextContent{Text: sampleAnswer(name)}}, nil
			},
		})
	}
	a := connectHTTPClient(t, hp, newClient("A"), protocolVersion)
	b := connectHTTPClient(t, hp, newClient("B"), protocolVersion)
	waitTool(ctx, t, a, "iso__sample")

	pidA, pidB := text(call(ctx, t, a, "iso__pid", nil)), text(call(ctx, t, b, "iso__pid", nil))
	if pidA == pidB {
		t.Errorf("isolation = \"session\": both sessions reached process %s, want one each", pidA)
	}
	if again := text(call(ctx, t, a, "iso__pid", nil)); again != pidA {
		t.Errorf("session A reached process %s, then %s; want the same one", pidA, again)
	}
	if sa, sb := text(call(ctx, t, a, "shared__pid", nil)), text(call(ctx, t, b, "shared__pid", nil)); sa != sb {
		t.Errorf("a shared server answered from %s and %s, want one process", sa, sb)
	}

	var wg sync.WaitGroup
	for name, cs := range map[string]*mcp.ClientSession{"A": a, "B": b} {
		wg.Go(func() {
			res := call(ctx, t, cs, "iso__sample", map[string]any{"prompt": "from " + name})
			if got, want := text(res), "iso: sampled model=e2e text="+sampleAnswer(name); got != want || res.IsError {
				t.Errorf("session %s: iso__sample = %q (isError %v), want %q", name, got, res.IsError, want)
			}
		})
	}
	wg.Wait()
}
