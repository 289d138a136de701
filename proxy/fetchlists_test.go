package proxy

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/upstream"
)

// TestFetchListsAtOnce: a start asks a server of the initialize era for the
// four lists at once. The upstream answers none of them until it has been
// asked for all four (a bounded wait, then an error): asked one after the
// other, the first list fails and its items are missing from the catalog.
func TestFetchListsAtOnce(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "gate", Version: "0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "t", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	srv.AddPrompt(&mcp.Prompt{Name: "p"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	srv.AddResource(&mcp.Resource{Name: "r", URI: "file:///r"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	})
	srv.AddResourceTemplate(&mcp.ResourceTemplate{Name: "rt", URITemplate: "file:///{x}"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	})
	lists := []string{"tools/list", "prompts/list", "resources/list", "resources/templates/list"}
	var mu sync.Mutex
	asked := map[string]bool{}
	all := make(chan struct{})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if !strings.HasSuffix(method, "/list") {
				return next(ctx, method, req)
			}
			mu.Lock()
			if !asked[method] {
				asked[method] = true
				if len(asked) == len(lists) {
					close(all)
				}
			}
			mu.Unlock()
			select {
			case <-all:
			case <-time.After(10 * time.Second): // a bound, not a speed: the lists were asked one by one
				return nil, errors.New("the other lists were not asked for while this one waited")
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return next(ctx, method, req)
		}
	})
	dial := inMemoryDial(t, srv)
	s := startedServer(t, Options{Servers: []ServerConfig{{Upstream: upstream.Options{Name: "gate", Dial: dial}, Prefix: "g"}}})
	var got []string
	for _, e := range s.Catalog() {
		got = append(got, e.Kind+" "+e.Exposed)
	}
	sort.Strings(got)
	want := []string{"prompt g__p", "resource g+file:///r", "template g+file:///{x}", "tool g__t"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("catalog after the start = %q, want %q", got, want)
	}
}
