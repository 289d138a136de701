package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tests against the npm reference servers, run from node_modules/.bin.

func TestFilesystemServers(t *testing.T) {
	t.Parallel()
	bin := nodeBin(t, "mcp-server-filesystem")
	dirs := map[string]string{}
	var cfg strings.Builder
	for _, server := range []string{"fsa", "fsb"} {
		dir, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "note.txt"), []byte("note of "+server+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		dirs[server] = dir
		fmt.Fprintf(&cfg, "\n[servers.%s]\ncommand = %s\nargs = %s\n", server, tomlStr(bin), tomlStrs([]string{dir}))
	}
	sp := startStdio(t, writeConfig(t, cfg.String()))
	ctx := testCtx(t)
	tools := listTools(ctx, t, sp.cs)
	for _, server := range []string{"fsa", "fsb"} {
		for _, n := range []string{"read_text_file", "list_allowed_directories"} {
			if tools[server+"__"+n] == nil {
				t.Fatalf("%s__%s not listed: %v", server, n, toolNames(tools))
			}
		}
	}

	for _, server := range []string{"fsa", "fsb"} {
		other := map[string]string{"fsa": "fsb", "fsb": "fsa"}[server]
		t.Run(server, func(t *testing.T) {
			res := call(ctx, t, sp.cs, server+"__read_text_file", map[string]any{"path": filepath.Join(dirs[server], "note.txt")})
			if got, want := text(res), "note of "+server+"\n"; got != want || res.IsError {
				t.Errorf("%s__read_text_file(own note) = %q (isError %v), want %q", server, got, res.IsError, want)
			}
			// The other server's folder is outside this one's sandbox: a
			// wrong route would read it.
			res = call(ctx, t, sp.cs, server+"__read_text_file", map[string]any{"path": filepath.Join(dirs[other], "note.txt")})
			if !res.IsError {
				t.Errorf("%s__read_text_file(%s's note) = %q, want isError (outside its allowed directories)", server, other, text(res))
			}
			res = call(ctx, t, sp.cs, server+"__list_allowed_directories", nil)
			got := text(res)
			if !strings.Contains(got, dirs[server]) || strings.Contains(got, dirs[other]) {
				t.Errorf("%s__list_allowed_directories = %q, want %s and not %s", server, got, dirs[server], dirs[other])
			}
		})
	}
}

func TestMemoryServer(t *testing.T) {
	t.Parallel()
	bin := nodeBin(t, "mcp-server-memory")
	cfg := fmt.Sprintf("[servers.memory]\ncommand = %s\nenv = { MEMORY_FILE_PATH = %s }\n",
		tomlStr(bin), tomlStr(filepath.Join(t.TempDir(), "memory.jsonl")))
	sp := startStdio(t, writeConfig(t, cfg))
	ctx := testCtx(t)

	entity := map[string]any{"name": "Manifold", "entityType": "project", "observations": []string{"one MCP server in front of many"}}
	res := call(ctx, t, sp.cs, "memory__create_entities", map[string]any{"entities": []any{entity}})
	if res.IsError {
		t.Fatalf("memory__create_entities: %q", text(res))
	}
	res = call(ctx, t, sp.cs, "memory__open_nodes", map[string]any{"names": []string{"Manifold"}})
	sc, _ := asJSON(t, res.StructuredContent).(map[string]any)
	entities, _ := sc["entities"].([]any)
	if res.IsError || len(entities) != 1 {
		t.Fatalf("memory__open_nodes = %q, structured %v; want the one entity", text(res), sc)
	}
	got, _ := entities[0].(map[string]any)
	if got["name"] != "Manifold" || got["entityType"] != "project" {
		t.Errorf("entity read back = %v, want name Manifold, type project", got)
	}

	// Its knowledge-graph resource, if it lists one, reads back through the
	// rewritten URI.
	for r, err := range sp.cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatalf("resources/list: %v", err)
		}
		if !strings.HasPrefix(r.URI, "memory+") {
			t.Errorf("resource %q: want the prefix memory+", r.URI)
			continue
		}
		rr, err := sp.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: r.URI})
		if err != nil {
			t.Errorf("read %s: %v", r.URI, err)
			continue
		}
		if len(rr.Contents) == 0 || rr.Contents[0].URI != r.URI || !strings.Contains(rr.Contents[0].Text, "Manifold") {
			t.Errorf("read %s = %+v, want the graph with Manifold under the same URI", r.URI, rr.Contents)
		}
	}
}

func TestEverythingServer(t *testing.T) {
	t.Parallel()
	bin := nodeBin(t, "mcp-server-everything")
	cfg := fmt.Sprintf("[servers.everything]\ncommand = %s\nargs = [\"stdio\"]\n", tomlStr(bin))
	sp := startStdio(t, writeConfig(t, cfg))
	ctx := testCtx(t)
	tools := listTools(ctx, t, sp.cs)

	t.Run("echo", func(t *testing.T) {
		if tools["everything__echo"] == nil {
			t.Fatalf("everything__echo not listed: %v", toolNames(tools))
		}
		res := call(ctx, t, sp.cs, "everything__echo", map[string]any{"message": "hi"})
		if got, want := text(res), "Echo: hi"; got != want || res.IsError {
			t.Errorf("everything__echo = %q (isError %v), want %q", got, res.IsError, want)
		}
	})

	t.Run("resource", func(t *testing.T) {
		var uris []string
		for r, err := range sp.cs.Resources(ctx, nil) {
			if err != nil {
				t.Fatalf("resources/list: %v", err)
			}
			uris = append(uris, r.URI)
		}
		if len(uris) == 0 {
			t.Fatal("no resources listed")
		}
		for _, u := range uris {
			if !strings.HasPrefix(u, "everything+") {
				t.Errorf("resource %q: want the prefix everything+", u)
			}
		}
		rr, err := sp.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uris[0]})
		if err != nil {
			t.Fatalf("read %s: %v", uris[0], err)
		}
		if len(rr.Contents) == 0 || rr.Contents[0].URI != uris[0] || (rr.Contents[0].Text == "" && len(rr.Contents[0].Blob) == 0) {
			t.Errorf("read %s = %+v, want its contents under the same URI", uris[0], rr.Contents)
		}
	})

	t.Run("prompt", func(t *testing.T) {
		var names []string
		for p, err := range sp.cs.Prompts(ctx, nil) {
			if err != nil {
				t.Fatalf("prompts/list: %v", err)
			}
			names = append(names, p.Name)
		}
		if !slices.Contains(names, "everything__simple-prompt") {
			t.Fatalf("everything__simple-prompt not listed: %v", names)
		}
		gp, err := sp.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "everything__simple-prompt"})
		if err != nil {
			t.Fatalf("get everything__simple-prompt: %v", err)
		}
		if len(gp.Messages) != 1 {
			t.Fatalf("everything__simple-prompt: %d messages, want 1", len(gp.Messages))
		}
		if tc, ok := gp.Messages[0].Content.(*mcp.TextContent); !ok || tc.Text != "This is a simple prompt without arguments." {
			t.Errorf("everything__simple-prompt message = %#v", gp.Messages[0].Content)
		}
	})

	t.Run("resource links read back", func(t *testing.T) {
		const name = "everything__get-resource-links"
		if tools[name] == nil {
			t.Fatalf("%s not listed: %v", name, toolNames(tools))
		}
		res := call(ctx, t, sp.cs, name, map[string]any{"count": 2})
		var links []*mcp.ResourceLink
		for _, c := range res.Content {
			if l, ok := c.(*mcp.ResourceLink); ok {
				links = append(links, l)
			}
		}
		if len(links) != 2 || res.IsError {
			t.Fatalf("%s = %v (isError %v), want 2 resource links", name, texts(res.Content), res.IsError)
		}
		for _, l := range links {
			if !strings.HasPrefix(l.URI, "everything+demo://") {
				t.Errorf("resource link %q: want it rewritten as everything+demo://…", l.URI)
				continue
			}
			rr, err := sp.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: l.URI})
			if err != nil {
				t.Errorf("read %s: %v", l.URI, err)
				continue
			}
			if len(rr.Contents) != 1 || rr.Contents[0].URI != l.URI || (rr.Contents[0].Text == "" && len(rr.Contents[0].Blob) == 0) {
				t.Errorf("read %s = %+v, want its contents under the same URI", l.URI, rr.Contents)
			}
		}
	})
}
