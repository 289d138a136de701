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

// TestNameBudgetPolicy: a policy file rule written for a tool's whole name
// (its prefix, "__" and original name) still decides when the tool is
// exposed under a shortened name: the denied tool is not listed, a call of
// its shortened name is refused as for an unknown tool, and explain cites
// the rule. Before the fix the rules saw only the shortened name.
func TestNameBudgetPolicy(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, global, prefix, match string
	}{
		{name: "full name", prefix: "fx", match: "fx__" + fixtureLongTool},
		{name: "suffix glob", prefix: "fx", match: "*_080"},
		// The prefix is kept (max_name_length leaves room for it), but the
		// rule names the whole name, which the exposed one cuts.
		{name: "long prefix", global: "max_name_length = 37\n", prefix: "a_rather_long_prefix_name", match: "a_rather_long_prefix_name__*_080"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rules := "[rules.no_long]\nmatch = " + tomlStr(tt.match) + "\ndeny = true\nreason = \"too long to review\"\n"
			body := tt.global + `policy_files = ["policy/*.toml"]` + "\n" +
				fixture("fx", []string{"-tools", "echo," + fixtureLongTool}, "prefix = "+tomlStr(tt.prefix))
			cfg := policyConfig(t, body, map[string]string{"policy/base.toml": rules})
			budget := 49
			if tt.global != "" {
				budget = 37
			}
			short := shortened(tt.prefix, fixtureLongTool, budget)

			sp := startStdio(t, cfg)
			ctx := testCtx(t)
			if diff := cmp.Diff([]string{tt.prefix + "__echo"}, toolNames(listTools(ctx, t, sp.cs))); diff != "" {
				t.Errorf("tools under the deny rule (-want +got):\n%s", diff)
			}
			checkLikeUnknown(ctx, t, sp.cs, short, tt.prefix+"__nosuch")
			sp.stop()

			want := `hidden: rule "no_long" (policy/base.toml:1): too long to review`
			if out := runIn(t, filepath.Dir(cfg), "explain", "--config", cfg, short); !strings.Contains(out, want) {
				t.Errorf("manifold explain %s = %q, want it to say %q", short, out, want)
			}
		})
	}
}

// TestNameBudgetPrefixRefused: a max_name_length that leaves no room for a
// server's prefix, "__" and a shortened name is refused by check (and so at
// start), since the shortened names would lose the prefix: a deny on
// "prefix__*" would hide nothing, and the names would leave the server's
// namespace, which namespace checks rely on.
func TestNameBudgetPrefixRefused(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, "max_name_length = 20\n"+
		fixture("fx", []string{"-tools", "echo," + fixtureLongTool}, `prefix = "a_rather_long_prefix_name"`))
	stdout, stderr, code := runCLI(t, "check", "--config", cfg)
	const want = `servers.fx.prefix: prefix "a_rather_long_prefix_name" (25 characters) does not fit in max_name_length = 20`
	if code == 0 || !strings.Contains(stderr, want) {
		t.Errorf("manifold check: exit %d, stdout %q, stderr %q; want a failure saying %q", code, stdout, stderr, want)
	}
}
