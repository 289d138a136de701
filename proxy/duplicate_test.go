package proxy

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/upstream"
)

// syncLog is a log buffer safe for the proxy's goroutines.
type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.b.Write(p) }
func (l *syncLog) String() string              { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// TestDuplicateNamesInOneList: a server that lists one tool (or prompt)
// name twice gets one entry, and the duplicate is logged (once).
func TestDuplicateNamesInOneList(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "0"}, nil)
	for _, name := range []string{"read", "write"} {
		srv.AddTool(&mcp.Tool{Name: name, Description: "The first " + name + ".", InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	srv.AddPrompt(&mcp.Prompt{Name: "greet", Description: "The first greet."}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	// What the server sends: each list with its first item again, described otherwise.
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			switch r := res.(type) {
			case *mcp.ListToolsResult:
				if len(r.Tools) > 0 {
					dup := *r.Tools[0]
					dup.Description = "The second " + dup.Name + "."
					r.Tools = append(r.Tools, &dup)
				}
			case *mcp.ListPromptsResult:
				if len(r.Prompts) > 0 {
					dup := *r.Prompts[0]
					dup.Description = "The second " + dup.Name + "."
					r.Prompts = append(r.Prompts, &dup)
				}
			}
			return res, err
		}
	})
	u := &pinUpstream{srv: srv}
	var log syncLog
	s := startedServer(t, Options{
		Logger:  slog.New(slog.NewTextHandler(&log, nil)),
		Servers: []ServerConfig{{Upstream: upstream.Options{Name: "up", Dial: u.dial(t)}, Prefix: "up"}},
	})

	count := map[string]int{}
	for _, e := range s.Catalog() {
		count[e.Kind+" "+e.Exposed]++
		if e.Exposed == "up__read" && !strings.HasSuffix(e.Description, " read.") {
			t.Errorf("up__read: %q", e.Description)
		}
	}
	for _, k := range []string{"tool up__read", "tool up__write", "prompt up__greet"} {
		if count[k] != 1 {
			t.Errorf("catalog has %s %d times, want once: %v", k, count[k], count)
		}
	}

	cr, pw := io.Pipe()
	pr, cw := io.Pipe()
	go func() { _ = s.ServeStdio(t.Context(), pr, pw); pw.Close() }()
	defer cw.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil).Connect(t.Context(),
		&mcp.IOTransport{Reader: cr, Writer: cw}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "up__read,up__write" {
		t.Errorf("tools/list names %q, want up__read,up__write once each", names)
	}
	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(prompts.Prompts) != 1 {
		t.Errorf("prompts/list: %d prompts, want up__greet once", len(prompts.Prompts))
	}
	s.SetPolicy(nil) // a rebuild: the same lists, logged already
	for _, kv := range [][2]string{{"tool", "read"}, {"prompt", "greet"}} {
		l := log.String()
		if strings.Count(l, "listed a "+kv[0]+" twice") != 1 || !strings.Contains(l, kv[0]+"="+kv[1]) {
			t.Errorf("the log does not say once that the server listed %s %s twice:\n%s", kv[0], kv[1], l)
		}
	}
}
