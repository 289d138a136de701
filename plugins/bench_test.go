package plugins_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/plugins"
	"github.com/manifold-mcp/manifold/plugins/internal/testtools"
)

var sink string

// BenchmarkPluginCall measures a tools/call of the test plugin's reverse
// tool from an MCP client through the host (in-memory MCP, then gRPC to the
// plugin process), and reports it as ratios: x-direct against calling the
// same Go function directly, x-inprocess against the same function served
// by an in-process go-sdk MCP server over an in-memory transport.
//
//	go test -run '^$' -bench PluginCall ./plugins/
func BenchmarkPluginCall(b *testing.B) {
	const input = "a call through a plugin"
	args := map[string]any{"text": input}

	// The references are timed by hand: testing.Benchmark cannot run
	// inside a benchmark.
	direct := measure(func() { sink = testtools.Reverse(input) })

	srv := mcp.NewServer(&mcp.Implementation{Name: "inprocess"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "reverse"}, func(_ context.Context, _ *mcp.CallToolRequest, in testtools.ReverseIn) (*mcp.CallToolResult, testtools.ReverseOut, error) {
		return nil, testtools.ReverseOut{Text: testtools.Reverse(in.Text)}, nil
	})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ss.Close()
	ics, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	defer ics.Close()
	inprocess := measure(func() {
		if _, err := ics.CallTool(context.Background(), &mcp.CallToolParams{Name: "reverse", Arguments: args}); err != nil {
			b.Fatal(err)
		}
	})

	h := plugins.NewHost(plugins.Options{Name: "bench", Command: testPlugin})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	tr, err := h.Dial(ctx)
	cancel()
	if err != nil {
		b.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	for b.Loop() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "reverse", Arguments: args})
		if err != nil || res.IsError {
			b.Fatalf("call: %v, %+v", err, res)
		}
	}
	perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(perOp/direct, "x-direct")
	b.ReportMetric(perOp/inprocess, "x-inprocess")
}

// measure returns the mean time of f in nanoseconds, over at least 100
// calls and half a second.
func measure(f func()) float64 {
	start := time.Now()
	n := 0
	for n < 100 || time.Since(start) < 500*time.Millisecond {
		f()
		n++
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n)
}
