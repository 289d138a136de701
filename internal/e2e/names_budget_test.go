package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// Exposed names fit the client's budget (issue 10, item 6): Claude Code sends
// a tool to the model as mcp__<entry>__<name>, and the model API takes at
// most 64 characters, so with the entry "manifold" an exposed name has 49.

// fixtureLongTool is the fixture's 80-character tool name (longToolName).
const fixtureLongTool = "this_is_a_very_long_tool_name_that_the_proxy_must_shorten_before_exposing_it_080"

// shortened is the exposed form of a name too long for budget: the head of
// the full name, "-" and 8 hex digits of sha256(prefix NUL name).
func shortened(prefix, name string, budget int) string {
	sum := sha256.Sum256([]byte(prefix + "\x00" + name))
	return (prefix + "__" + name)[:budget-9] + "-" + hex.EncodeToString(sum[:])[:8]
}

// TestNameBudget: by default every exposed name has at most 49 characters,
// so that mcp__manifold__<name> fits in 64; the long name is shortened the
// same way on every start and can be called; max_name_length changes the
// budget.
func TestNameBudget(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		global string
		budget int
	}{
		{name: "default", budget: 49},
		{name: "max_name_length 64", global: "max_name_length = 64\n", budget: 64},
		{name: "max_name_length 30", global: "max_name_length = 30\n", budget: 30},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := writeConfig(t, tt.global+fixture("alpha", []string{"-tools", "echo,dotted.name," + fixtureLongTool}))
			want := shortened("alpha", fixtureLongTool, tt.budget)
			for run := range 2 { // the same name on every start
				sp := startStdio(t, cfg)
				ctx := testCtx(t)
				tools := listTools(ctx, t, sp.cs)
				for _, n := range toolNames(tools) {
					if len(n) > tt.budget {
						t.Errorf("run %d: %q has %d characters, over the budget of %d", run+1, n, len(n), tt.budget)
					}
				}
				if tools[want] == nil {
					t.Fatalf("run %d: the long tool is not listed as %q: %v", run+1, want, toolNames(tools))
				}
				for name, text0 := range map[string]string{want: "alpha: long", "alpha__dotted_name": "alpha: dotted", "alpha__echo": "alpha: hi"} {
					if got := text(call(ctx, t, sp.cs, name, map[string]any{"message": "hi"})); got != text0 {
						t.Errorf("run %d: %s = %q, want %q", run+1, name, got, text0)
					}
				}
				sp.stop()
			}
		})
	}
}
