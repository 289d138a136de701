package naming

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestClientCheck(t *testing.T) {
	n49 := "files__" + strings.Repeat("a", 42) // 49: fits Claude Code behind "manifold"
	n50 := n49 + "b"
	longA := "srv__" + strings.Repeat("x", 60) + "_alpha"
	longB := "srv__" + strings.Repeat("x", 60) + "_beta"
	many := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, "s__t"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+strings.Repeat("y", i/26))
		}
		return out
	}
	tests := []struct {
		client, entry string
		names         []string
		want          []Problem
	}{
		{client: "claude-code", entry: "manifold", names: []string{n49, "files__read"}},
		{client: "claude", entry: "manifold", names: []string{n50, n49},
			want: []Problem{{Name: n50, As: "mcp__manifold__" + n50, What: "65 characters: the model API refuses tool names over 64, so the tool fails every request"}}},
		{client: "claude-code", entry: "manifold-work", names: []string{n49},
			want: []Problem{{Name: n49, As: "mcp__manifold-work__" + n49, What: "69 characters: the model API refuses tool names over 64, so the tool fails every request"}}},
		{client: "codex", entry: "manifold", names: []string{"gh__list-issues", "gh__list_issues", "gh__get"},
			want: []Problem{{Name: "gh__list_issues", As: "gh__list_issues", Other: "gh__list-issues",
				What: `Codex writes "-" as "_": gh__list-issues and gh__list_issues are both gh__list_issues to it`}}},
		{client: "gemini", entry: "manifold", names: []string{"files__read", longA, longB},
			want: []Problem{
				{Name: longA, As: ("mcp_manifold_" + longA)[:60] + "...", What: "Gemini CLI cuts names past 63 characters (this one is 84); the model sees the cut name"},
				{Name: longB, As: ("mcp_manifold_" + longB)[:60] + "...", Other: longA,
					What: "Gemini CLI cuts names past 63 characters: " + longA + " and " + longB + " are both " + ("mcp_manifold_" + longA)[:60] + "..." + " to it"},
			}},
		{client: "cursor", entry: "manifold", names: []string{"files__" + strings.Repeat("c", 46)},
			want: []Problem{{Name: "files__" + strings.Repeat("c", 46), What: "server and tool name together are 61 characters: Cursor leaves out tools past 60"}}},
		{client: "cursor", entry: "m", names: many(41),
			want: []Problem{{What: "41 tools: Cursor warns past about 40, and the model picks worse among many"}}},
		{client: "cursor", entry: "m", names: many(40)},
		{client: "vscode", entry: "manifold", names: many(128)},
		{client: "VS-Code", entry: "manifold", names: many(129),
			want: []Problem{{What: "129 tools: VS Code sends at most 128 tools per request and groups the rest into virtual tools"}}},
		{client: "windsurf", entry: "manifold", names: many(100)},
		{client: "windsurf", entry: "manifold", names: many(101),
			want: []Problem{{What: "101 tools: Windsurf takes at most 100 MCP tools in all, across every server"}}},
	}
	for _, tt := range tests {
		t.Run(tt.client+"/"+tt.entry, func(t *testing.T) {
			c, ok := LookupClient(tt.client)
			if !ok {
				t.Fatalf("LookupClient(%q) found nothing", tt.client)
			}
			got := c.Check(tt.entry, tt.names)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Check (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClientBudget(t *testing.T) {
	tests := []struct {
		client, entry string
		want          int
	}{
		{"claude-code", "manifold", 49},
		{"claude-code", "manifold-work", 44},
		{"codex", "manifold", 49},
		{"gemini", "manifold", 50},
		{"cursor", "manifold", 52},
		{"vscode", "manifold", 64},
	}
	for _, tt := range tests {
		c, _ := LookupClient(tt.client)
		if got := c.Budget(tt.entry); got != tt.want {
			t.Errorf("%s behind %q: budget %d, want %d", tt.client, tt.entry, got, tt.want)
		}
		// A name of the budget passes, one longer is flagged.
		name := strings.Repeat("n", tt.want)
		if p := c.Check(tt.entry, []string{name}); len(p) != 0 {
			t.Errorf("%s behind %q: a name of %d flagged: %v", tt.client, tt.entry, tt.want, p)
		}
		if tt.want < MaxNameLen {
			if p := c.Check(tt.entry, []string{name + "n"}); len(p) == 0 {
				t.Errorf("%s behind %q: a name of %d not flagged", tt.client, tt.entry, tt.want+1)
			}
		}
	}
	if _, ok := LookupClient("netscape"); ok {
		t.Error("LookupClient found an unknown client")
	}
}
