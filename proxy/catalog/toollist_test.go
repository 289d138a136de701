package catalog

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestToolPageIsSDKs checks that the catalog pages its tools/list as the
// SDK paged the tools registered with it: the same names on each page, and
// cursors that each reads as the other's (a client holding a cursor the SDK
// made gets the same next page); and that a cursor the SDK would refuse is
// refused with its error.
func TestToolPageIsSDKs(t *testing.T) {
	const n = 2*mcp.DefaultPageSize + 7
	sdk := mcp.NewServer(&mcp.Implementation{Name: "sdk", Version: "1"}, nil)
	c := &Snapshot{ToolDefs: map[string]*mcp.Tool{}}
	for i := range n {
		def := &mcp.Tool{Name: fmt.Sprintf("s%d__t%04d", i%7, i), InputSchema: map[string]any{"type": "object"}}
		sdk.AddTool(def, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil })
		c.ToolDefs[def.Name] = def
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := sdk.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	names := func(tools []*mcp.Tool) []string {
		var out []string
		for _, t := range tools {
			out = append(out, t.Name)
		}
		return out
	}
	cursor, pages := "", 0
	for {
		want, err := cs.ListTools(t.Context(), &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.ToolPage(cursor)
		if err != nil {
			t.Fatalf("page after %q: %v", cursor, err)
		}
		if diff := cmp.Diff(names(want.Tools), names(got.Tools)); diff != "" {
			t.Fatalf("page %d (-sdk +catalog):\n%s", pages, diff)
		}
		if (got.NextCursor == "") != (want.NextCursor == "") {
			t.Fatalf("page %d: next cursor %q, the SDK's %q", pages, got.NextCursor, want.NextCursor)
		}
		if got.NextCursor != "" {
			// Each reads the other's cursor as its own.
			fromOurs, err := cs.ListTools(t.Context(), &mcp.ListToolsParams{Cursor: got.NextCursor})
			if err != nil {
				t.Fatalf("the SDK refused the catalog's cursor: %v", err)
			}
			fromSDKs, err := c.ToolPage(want.NextCursor)
			if err != nil {
				t.Fatalf("the catalog refused the SDK's cursor: %v", err)
			}
			if diff := cmp.Diff(names(fromOurs.Tools), names(fromSDKs.Tools)); diff != "" {
				t.Fatalf("page %d by the other's cursor (-sdk +catalog):\n%s", pages+1, diff)
			}
		}
		pages++
		if cursor = got.NextCursor; cursor == "" {
			break
		}
	}
	if pages != 3 {
		t.Errorf("%d tools in %d pages, want 3", n, pages)
	}
	for _, bad := range []string{"not base64!", "AAAA"} {
		_, sdkErr := cs.ListTools(t.Context(), &mcp.ListToolsParams{Cursor: bad})
		_, err := c.ToolPage(bad)
		var we, ge *jsonrpc.Error
		if !errors.As(sdkErr, &we) || !errors.As(err, &ge) || we.Code != ge.Code || we.Message != ge.Message {
			t.Errorf("cursor %q: catalog's error %v, the SDK's %v", bad, err, sdkErr)
		}
	}
}
