package e2e

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Protocol versions, instructions and calls that arrive early: what a client
// sees of the proxy's own protocol behaviour.

func TestProtocolVersions(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, fixture("alpha", []string{"-tools", "echo,whoami,link", "-extra", "structonly"}))
	hp := startHTTP(t, cfg)
	versions := []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}
	for _, tr := range transports {
		for _, version := range versions {
			t.Run(tr.name+"/"+version, func(t *testing.T) {
				t.Parallel()
				client := mcp.NewClient(&mcp.Implementation{Name: "e2e-" + version, Version: "0"}, nil)
				var cs *mcp.ClientSession
				if tr.http {
					cs = connectHTTPClient(t, hp, client, version)
				} else {
					cs = startStdioClient(t, cfg, client, version).cs
				}
				ctx := testCtx(t)
				if got := cs.InitializeResult().ProtocolVersion; got != version {
					t.Errorf("negotiated protocol version %q, want %q", got, version)
				}
				// Structured output, output schemas, titles and resource links
				// came with 2025-06-18; tool annotations with 2025-03-26.
				structured := version >= "2025-06-18"
				annotated := version >= "2025-03-26"

				tools := listTools(ctx, t, cs)
				for _, n := range []string{"alpha__echo", "alpha__whoami", "alpha__link", "alpha__structonly"} {
					if tools[n] == nil {
						t.Fatalf("%s not listed: %v", n, toolNames(tools))
					}
				}
				if got := tools["alpha__echo"].OutputSchema != nil; got != structured {
					t.Errorf("alpha__echo has an outputSchema: %v, want %v", got, structured)
				}
				if got := tools["alpha__structonly"].OutputSchema != nil; got != structured {
					t.Errorf("alpha__structonly has an outputSchema: %v, want %v", got, structured)
				}
				if got, want := tools["alpha__structonly"].Title, map[bool]string{true: "Structured only"}[structured]; got != want {
					t.Errorf("alpha__structonly title %q, want %q", got, want)
				}
				if got := tools["alpha__whoami"].Annotations != nil; got != annotated {
					t.Errorf("alpha__whoami has annotations: %v, want %v", got, annotated)
				}

				echo := call(ctx, t, cs, "alpha__echo", map[string]any{"message": "hi"})
				if diff := cmp.Diff([]string{"alpha: hi"}, texts(echo.Content)); diff != "" {
					t.Errorf("alpha__echo content (-want +got):\n%s", diff)
				}
				var wantSC any
				if structured {
					wantSC = map[string]any{"server": "alpha", "message": "hi"}
				}
				if diff := cmp.Diff(wantSC, asJSON(t, echo.StructuredContent)); diff != "" {
					t.Errorf("alpha__echo structuredContent (-want +got):\n%s", diff)
				}

				// A result with structuredContent only: older clients get
				// its JSON as a text block instead.
				so := call(ctx, t, cs, "alpha__structonly", nil)
				wantTexts, wantSC := []string{`{"server":"alpha"}`}, any(nil)
				if structured {
					wantTexts, wantSC = []string{}, map[string]any{"server": "alpha"}
				}
				if diff := cmp.Diff(wantTexts, texts(so.Content)); diff != "" {
					t.Errorf("alpha__structonly content (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(wantSC, asJSON(t, so.StructuredContent)); diff != "" {
					t.Errorf("alpha__structonly structuredContent (-want +got):\n%s", diff)
				}

				const linked = "alpha+fixture://alpha/linked.txt"
				link := call(ctx, t, cs, "alpha__link", nil)
				if len(link.Content) != 2 {
					t.Fatalf("alpha__link: %d content blocks, want 2: %v", len(link.Content), texts(link.Content))
				}
				switch c := link.Content[0].(type) {
				case *mcp.ResourceLink:
					if !structured || c.URI != linked {
						t.Errorf("alpha__link block 1: resource_link %q; want it for 2025-06-18 on, with URI %s", c.URI, linked)
					}
				case *mcp.TextContent:
					if structured || !strings.Contains(c.Text, linked) {
						t.Errorf("alpha__link block 1: text %q; want a resource_link for 2025-06-18 on, else a text naming %s", c.Text, linked)
					}
				default:
					t.Errorf("alpha__link block 1: %T, want a resource_link or a text", c)
				}
			})
		}
	}
}

func TestInstructions(t *testing.T) {
	t.Parallel()
	const alphaText, betaText = "Alpha answers with echo.", "Beta keeps this to itself."
	alpha := func(extra ...string) string {
		return fixture("alpha", []string{"-tools", "echo", "-instructions", alphaText}, extra...)
	}
	beta := fixture("beta", []string{"-tools", "echo", "-instructions", betaText})
	tests := []struct {
		name   string
		cfg    string
		want   []string // in the instructions
		absent []string // not in them
	}{
		// Every server has its line in the summary (the first sentence
		// of its instructions); only those that opted in add the whole.
		{name: "opted in", cfg: alpha("instructions = true") + beta,
			want:   []string{"- alpha: " + alphaText + " (tools alpha__*)\n- beta: " + betaText + " (tools beta__*)", "\n\n## alpha\n\n" + alphaText},
			absent: []string{"## beta"}},
		{name: "not opted in", cfg: alpha() + beta,
			want: []string{"- alpha: " + alphaText + " (tools alpha__*)"}, absent: []string{"## alpha", "## beta"}},
		{name: "opted out", cfg: alpha("instructions = false"),
			want: []string{"- alpha: " + alphaText + " (tools alpha__*)"}, absent: []string{"## alpha"}},
	}
	for _, tr := range transports {
		for _, tt := range tests {
			t.Run(tr.name+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				s := startSession(t, tt.cfg, tr.http)
				got := s.cs.InitializeResult().Instructions
				for _, w := range tt.want {
					if !strings.Contains(got, w) {
						t.Errorf("instructions %q lack %q", got, w)
					}
				}
				for _, a := range tt.absent {
					if strings.Contains(got, a) {
						t.Errorf("instructions %q, want them without %q", got, a)
					}
				}
			})
		}
	}
}

// TestCallBeforeList calls a tool of an upstream that is still starting,
// before any tools/list, as a client that remembers tool names from an
// earlier session does: the call waits for the upstream rather than failing
// as an unknown tool.
func TestCallBeforeList(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			s := startSession(t, fixture("alpha", []string{"-mode", "slowstart", "-delay", "1500ms"}), tr.http)
			ctx := testCtx(t)
			res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha__echo", Arguments: map[string]any{"message": "early"}})
			if err != nil {
				t.Fatalf("alpha__echo while alpha starts: %v", err)
			}
			if got, want := text(res), "alpha: early"; got != want {
				t.Errorf("alpha__echo while alpha starts = %q, want %q", got, want)
			}
		})
	}
}
