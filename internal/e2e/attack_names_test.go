package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Attacks on names, configs and upstreams (issue 9): an unprefixed server
// squatting another server's namespace, malformed list items, policy files
// deleted or broken while serving, renames that would escape a deny rule,
// prompt rates, and result caps that ignore _meta and unknown members.

// listPromptNames returns the sorted names of every prompt cs lists.
func listPromptNames(ctx context.Context, t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatalf("prompts/list: %v", err)
		}
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names
}

// TestAttackNamespaceSquatting runs an unprefixed server that lists tools and
// prompts named files__echo (a name of the files server) and
// files__delete_everything (a new name in its namespace), before and after
// the files server in the config: in both orders neither name reaches the
// squatter, a call of files__echo reaches the files server, and the log
// names both servers.
func TestAttackNamespaceSquatting(t *testing.T) {
	t.Parallel()
	squat := fixture("squat", []string{"-tools", "whoami", "-squat", "files__echo,files__delete_everything"}, `prefix = ""`)
	files := fixture("files", []string{"-tools", "echo"})
	for _, tt := range []struct {
		name string
		body string
	}{
		{"squatter first", squat + files},
		{"squatter second", files + squat},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sp := startStdio(t, writeConfig(t, tt.body))
			ctx := testCtx(t)
			if diff := cmp.Diff([]string{"files__echo", "whoami"}, toolNames(listTools(ctx, t, sp.cs))); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			if got := text(call(ctx, t, sp.cs, "files__echo", map[string]any{"message": "hi"})); got != "files: hi" {
				t.Errorf("files__echo = %q, want the files server's %q", got, "files: hi")
			}
			checkLikeUnknown(ctx, t, sp.cs, "files__delete_everything", "files__nosuch")
			if diff := cmp.Diff([]string{"files__greet", "greet"}, listPromptNames(ctx, t, sp.cs)); diff != "" {
				t.Errorf("prompts (-want +got):\n%s", diff)
			}
			if _, err := sp.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "files__echo"}); err == nil {
				t.Error("prompts/get files__echo succeeded; the squatter's prompt must not be served")
			}
			for _, kind := range []string{"tool", "prompt"} {
				for _, name := range []string{"files__echo", "files__delete_everything"} {
					awaitStderr(t, sp.proc, 1, kind+" name refused", "exposed="+name, "namespace_server=files", "refused_server=squat")
				}
			}
		})
	}
}

// TestAttackRenameKeepsDeny denies files__echo* in a policy file and renames
// echo to say_it with an override: say_it is hidden and refused like an
// unknown tool, and `manifold explain` cites the rule.
func TestAttackRenameKeepsDeny(t *testing.T) {
	t.Parallel()
	const rules = "[rules.no_echo]\nmatch = \"files__echo*\"\ndeny = true\nreason = \"echo is off\"\n"
	cfg := policyConfig(t, `policy_files = ["policy/*.toml"]`+"\n"+
		fixture("files", []string{"-tools", "echo,whoami"}, "[servers.files.overrides.echo]", `name = "say_it"`),
		map[string]string{"policy/base.toml": rules})
	sp := startStdio(t, cfg)
	ctx := testCtx(t)
	if diff := cmp.Diff([]string{"files__whoami"}, toolNames(listTools(ctx, t, sp.cs))); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	checkLikeUnknown(ctx, t, sp.cs, "say_it", "say_nosuch")
	checkLikeUnknown(ctx, t, sp.cs, "files__echo", "files__nosuch")
	out, errOut, code := runCLI(t, "explain", "--config", cfg, "say_it")
	if code != 0 || !strings.Contains(out, `hidden: rule "no_echo" (policy/base.toml:1)`) {
		t.Errorf("manifold explain say_it = %q (exit %d, stderr %q); want it hidden by rule \"no_echo\" (policy/base.toml:1)", out, code, errOut)
	}
}

// TestAttackPromptRate limits the prompt alpha__greet to 2 a minute: the
// third prompts/get is refused with an error saying when to retry, and the
// tool alpha__echo, matched by the same glob but its own bucket, still
// answers.
func TestAttackPromptRate(t *testing.T) {
	t.Parallel()
	const rules = "[rules.slow]\nmatch = \"alpha__*\"\nrate = \"2/minute\"\n"
	cfg := policyConfig(t, `policy_files = ["policy/*.toml"]`+"\n"+fixture("alpha", []string{"-tools", "echo"}),
		map[string]string{"policy/limits.toml": rules})
	sp := startStdio(t, cfg)
	ctx := testCtx(t)
	get := func() (*mcp.GetPromptResult, error) {
		return sp.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "alpha__greet", Arguments: map[string]string{"who": "bob"}})
	}
	for i := range 2 {
		if _, err := get(); err != nil {
			t.Fatalf("prompts/get %d: %v", i+1, err)
		}
	}
	_, err := get()
	if err == nil || !strings.Contains(err.Error(), "rate limit") || !strings.Contains(err.Error(), "policy/limits.toml:1") || !strings.Contains(err.Error(), "Retry in") {
		t.Fatalf("third prompts/get: err = %v; want a rate limit error naming policy/limits.toml:1 and when to retry", err)
	}
	if res := call(ctx, t, sp.cs, "alpha__echo", map[string]any{"message": "hi"}); res.IsError {
		t.Errorf("alpha__echo = %q (isError); the prompt's calls must not use up the tool's rate", text(res))
	}
}

// TestAttackResultCapCountsEverything calls a tool whose result carries 1 MB
// in _meta and 1 MB in an unknown member under max_result_bytes = 10000,
// over stdio (the lean path) and HTTP (the SDK path): what the client gets,
// and what the audit log says went out, fit in 10000 bytes, and the note
// says what was cut.
func TestAttackResultCapCountsEverything(t *testing.T) {
	t.Parallel()
	const limit = 10_000
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			const rules = "[rules.small]\nmatch = \"alpha__fat\"\nmax_result_bytes = 10000\n"
			cfg := policyConfig(t, `policy_files = ["policy/*.toml"]`+"\n[audit]\nfile = \"audit.jsonl\"\n"+
				fixture("alpha", []string{"-tools", "echo", "-extra", "fat"}),
				map[string]string{"policy/limits.toml": rules})
			var cs *mcp.ClientSession
			if tr.http {
				cs = connectHTTP(t, startHTTP(t, cfg))
			} else {
				cs = startStdio(t, cfg).cs
			}
			ctx := testCtx(t)
			res := call(ctx, t, cs, "alpha__fat", map[string]any{"bytes": 1 << 20})
			b, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) > limit {
				t.Errorf("result is %d bytes (_meta %d keys), over max_result_bytes = %d", len(b), len(res.Meta), limit)
			}
			if got := text(res); !strings.Contains(got, "fat result") || !strings.Contains(got, "this result was cut") || !strings.Contains(got, "_meta") {
				t.Errorf("result text = %q; want the tool's text and a note that the result was cut, naming _meta", got)
			}
			audit := filepath.Join(filepath.Dir(cfg), "audit.jsonl")
			waitFor(t, 10*time.Second, "the audit line of alpha__fat", func() bool {
				for _, l := range readAudit(t, audit) {
					if l["exposed"] == "alpha__fat" {
						return true
					}
				}
				return false
			})
			for _, l := range readAudit(t, audit) {
				if l["exposed"] != "alpha__fat" {
					continue
				}
				if n, _ := l["result_bytes"].(float64); n <= 0 || n > limit || l["outcome"] != "ok, cut to max_result_bytes" {
					t.Errorf("audit: result_bytes %v, outcome %v; want at most %d bytes, cut to max_result_bytes", l["result_bytes"], l["outcome"], limit)
				}
			}
		})
	}
}

// TestAttackPolicyFileVariable writes ${PREFIX} into a policy file's match:
// policy files are not expanded, so `manifold check` refuses the rule with
// its file:line instead of saying ok about a rule that matches nothing.
func TestAttackPolicyFileVariable(t *testing.T) {
	t.Parallel()
	cfg := policyConfig(t, `policy_files = ["policy/*.toml"]`+"\n"+fixture("files", nil),
		map[string]string{"policy/base.toml": "[rules.no_writes]\nmatch = \"${PREFIX}__write_*\"\ndeny = true\n"})
	out, errOut, code := runCLI(t, "check", "--config", cfg)
	if code == 0 || !strings.Contains(errOut+out, "policy/base.toml:2") || !strings.Contains(errOut+out, "do not expand environment variables") {
		t.Errorf("manifold check = exit %d, stdout %q, stderr %q; want a failure naming policy/base.toml:2 and that policy files are not expanded", code, out, errOut)
	}
}

// TestAttackPolicyFileDeleted deletes the only policy file behind a
// policy_files glob while serving: its deny rule keeps applying (fail
// closed) and the reload is logged as an error, until the operator edits
// the config file, which accepts the change. A policy file that becomes
// unparsable keeps the last good rules as well.
func TestAttackPolicyFileDeleted(t *testing.T) {
	t.Parallel()
	const deny = "[rules.no_echo]\nmatch = \"alpha__echo\"\ndeny = true\n"
	body := `policy_files = ["policy/*.toml"]` + "\n" + fixture("alpha", []string{"-tools", "echo,whoami"})
	cfg := policyConfig(t, body, map[string]string{"policy/base.toml": deny})
	sp := startStdio(t, cfg)
	ctx := testCtx(t)
	want := []string{"alpha__whoami"}
	if diff := cmp.Diff(want, toolNames(listTools(ctx, t, sp.cs))); diff != "" {
		t.Fatalf("tools under the deny rule (-want +got):\n%s", diff)
	}
	policyFile := filepath.Join(filepath.Dir(cfg), "policy", "base.toml")

	// Unparsable: the last good rules stay.
	if err := os.WriteFile(policyFile, []byte("[rules.no_echo\nmatch = \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	awaitStderr(t, sp.proc, 1, "the new config is invalid", "policy/base.toml:2")
	if diff := cmp.Diff(want, toolNames(listTools(ctx, t, sp.cs))); diff != "" {
		t.Errorf("tools after the policy file broke (-want +got):\n%s", diff)
	}
	checkLikeUnknown(ctx, t, sp.cs, "alpha__echo", "alpha__nosuch")

	// Deleted: the glob matches nothing now; the rules stay.
	if err := os.Remove(policyFile); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the reload after the deletion (its error, or alpha__echo back)", func() bool {
		return strings.Contains(sp.stderr.String(), "matches none now") || listTools(ctx, t, sp.cs)["alpha__echo"] != nil
	})
	if diff := cmp.Diff(want, toolNames(listTools(ctx, t, sp.cs))); diff != "" {
		t.Errorf("tools after the policy file was deleted (-want +got):\n%s", diff)
	}
	checkLikeUnknown(ctx, t, sp.cs, "alpha__echo", "alpha__nosuch")
	awaitStderr(t, sp.proc, 1, "level=ERROR", "matches none now", "fail closed", "policy/*.toml")

	// The operator edits the config: the change is accepted.
	if err := os.WriteFile(cfg, []byte("# policy removed on purpose\n"+body), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "alpha__echo listed after the config edit", func() bool {
		return listTools(ctx, t, sp.cs)["alpha__echo"] != nil
	})
}

// TestAttackMalformedListItems runs a server that puts one malformed item at
// the head of each of its lists (a tool with "annotations":"x", a prompt
// with "arguments":"x", a resource with "size":"x", a template with
// "annotations":"x"): only those items are left out, each logged with the
// server's name and the item's, and the rest of its catalog is served.
func TestAttackMalformedListItems(t *testing.T) {
	t.Parallel()
	sp := startStdio(t, writeConfig(t, fixture("alpha", []string{"-tools", "echo,whoami", "-bad-items"})))
	ctx := testCtx(t)
	if diff := cmp.Diff([]string{"alpha__echo", "alpha__whoami"}, toolNames(listTools(ctx, t, sp.cs))); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if got := text(call(ctx, t, sp.cs, "alpha__echo", map[string]any{"message": "hi"})); got != "alpha: hi" {
		t.Errorf("alpha__echo = %q, want %q", got, "alpha: hi")
	}
	if diff := cmp.Diff([]string{"alpha__greet"}, listPromptNames(ctx, t, sp.cs)); diff != "" {
		t.Errorf("prompts (-want +got):\n%s", diff)
	}
	var uris []string
	for r, err := range sp.cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatalf("resources/list: %v", err)
		}
		uris = append(uris, r.URI)
	}
	if len(uris) != 2 || slices.ContainsFunc(uris, func(u string) bool { return strings.Contains(u, "bad") }) {
		t.Errorf("resources = %q; want the fixture's two, without the malformed one", uris)
	}
	var tmpls []string
	for r, err := range sp.cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			t.Fatalf("resources/templates/list: %v", err)
		}
		tmpls = append(tmpls, r.URITemplate)
	}
	if len(tmpls) != 1 || strings.Contains(tmpls[0], "bad") {
		t.Errorf("templates = %q; want the fixture's one, without the malformed one", tmpls)
	}
	for _, item := range []string{"tools/list item=bad_tool", "prompts/list item=bad_prompt", "resources/list item=fixture://bad/item", "resources/templates/list item=fixture://bad/{x}"} {
		awaitStderr(t, sp.proc, 1, "upstream=alpha", "malformed", "list="+item)
	}
}
