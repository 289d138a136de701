package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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

// TestUnknownToolErrors, over stdio and HTTP: a call of an unknown tool
// says which visible tool was probably meant and how names are formed, but
// never suggests a hidden one; a tool of a server that failed to start gets
// that server's error; and every such call is audited.
func TestUnknownToolErrors(t *testing.T) {
	t.Parallel()
	for _, tr := range []struct {
		name string
		http bool
	}{{"stdio", false}, {"http", true}} {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			cfg := writeConfig(t, "[audit]\nfile = \"audit.jsonl\"\n"+
				fixture("alpha", []string{"-tools", "echo,pid"}, `tools.deny = ["pid"]`)+
				fixture("broken", []string{"-mode", "exit"}))
			var cs *mcp.ClientSession
			if tr.http {
				cs = connectHTTP(t, startHTTP(t, cfg))
			} else {
				cs = startStdio(t, cfg).cs
			}
			ctx := testCtx(t)

			msg := callRPCError(ctx, t, cs, "echo", map[string]any{"message": "x"}).Message
			for _, want := range []string{`did you mean "alpha__echo"?`, "<server>__<tool>"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error for %q = %q, want it to contain %q", "echo", msg, want)
				}
			}
			if msg := callRPCError(ctx, t, cs, "pid", nil).Message; strings.Contains(msg, "alpha__pid") {
				t.Errorf("error for %q suggests the hidden alpha__pid: %q", "pid", msg)
			}
			checkLikeUnknown(ctx, t, cs, "alpha__pid", "alpha__nosuch")

			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "broken__echo", Arguments: map[string]any{}})
			if err != nil {
				t.Fatalf("call of a tool of the server that failed to start: %v, want an isError result naming the server", err)
			}
			if got := text(res); !res.IsError || !strings.Contains(got, `upstream "broken"`) || strings.Contains(got, "unknown tool") {
				t.Errorf("broken__echo = %q (isError %v), want an isError result with broken's error", got, res.IsError)
			}

			file := filepath.Join(filepath.Dir(cfg), "audit.jsonl")
			var outcomes []string
			for _, l := range readAudit(t, file) {
				outcomes = append(outcomes, fmt.Sprintf("%v %v", l["exposed"], l["outcome"]))
			}
			want := []string{"echo unknown tool", "pid unknown tool", "alpha__nosuch unknown tool", "alpha__pid hidden", "broken__echo unavailable"}
			if diff := cmp.Diff(want, outcomes); diff != "" {
				t.Errorf("audited calls (-want +got):\n%s", diff)
			}
		})
	}
}
