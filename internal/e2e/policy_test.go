package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// End-to-end tests of the policy and the audit log (issue 4): read-only
// mode, allow and deny globs, overrides, policy files reloaded while
// serving, rate limits, result caps, the audit log, and `manifold tools` and
// `manifold explain`.

// policyConfig writes proxy.toml with body and, next to it, the given files
// (path relative to the config folder -> content), and returns the path of
// proxy.toml.
func policyConfig(t *testing.T, body string, files map[string]string) string {
	t.Helper()
	cfg := writeConfig(t, body)
	for name, content := range files {
		p := filepath.Join(filepath.Dir(cfg), name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return cfg
}

// lineOf returns the 1-based number of the first line of text containing
// s, or fails the test.
func lineOf(t *testing.T, text, s string) int {
	t.Helper()
	for i, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			return i + 1
		}
	}
	t.Fatalf("%q not in:\n%s", s, text)
	return 0
}

// callRPCError calls a tool that must fail with a JSON-RPC error and returns
// that error.
func callRPCError(ctx context.Context, t *testing.T, cs *mcp.ClientSession, name string, args any) *jsonrpc.Error {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err == nil {
		t.Fatalf("call %s = %q (isError %v), want a JSON-RPC error", name, text(res), res.IsError)
	}
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) {
		t.Fatalf("call %s: error %v (%T), want a *jsonrpc.Error", name, err, err)
	}
	return rpcErr
}

// checkLikeUnknown checks that the error for calling name is the error for
// calling the name that does not exist, with the name swapped.
func checkLikeUnknown(ctx context.Context, t *testing.T, cs *mcp.ClientSession, name, unknown string) {
	t.Helper()
	ref := callRPCError(ctx, t, cs, unknown, map[string]any{})
	if ref.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("call of the unknown tool %s: code %d, want %d", unknown, ref.Code, jsonrpc.CodeInvalidParams)
	}
	got := callRPCError(ctx, t, cs, name, map[string]any{})
	want := &jsonrpc.Error{Code: ref.Code, Message: strings.ReplaceAll(ref.Message, unknown, name)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("call of hidden %s: error differs from an unknown tool's (-want +got):\n%s", name, diff)
	}
}

// snapshotDir returns every entry under dir (relative path -> content, or
// "<dir>" for folders).
func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := make(map[string]string)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			out[rel] = "<dir>"
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[rel] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// fsWriteTools are the tools @modelcontextprotocol/server-filesystem lists that
// write.
var fsWriteTools = []string{"write_file", "edit_file", "create_directory", "move_file"}

// TestPolicyReadOnlyFilesystem runs server-filesystem with read_only = true:
// its writing tools are neither listed nor callable (a call gets exactly the
// error of an unknown tool) and the folder is unchanged; its reading tools
// work.
func TestPolicyReadOnlyFilesystem(t *testing.T) {
	t.Parallel()
	bin := nodeBin(t, "mcp-server-filesystem")
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("content of a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("[servers.files]\ncommand = %s\nargs = %s\nread_only = true\n", tomlStr(bin), tomlStrs([]string{dir}))
	sp := startStdio(t, writeConfig(t, cfg))
	ctx := testCtx(t)
	before := snapshotDir(t, dir)

	tools := listTools(ctx, t, sp.cs)
	for _, n := range []string{"read_text_file", "list_directory"} {
		tool := tools["files__"+n]
		if tool == nil {
			t.Fatalf("files__%s not listed in read-only mode (does server-filesystem still send readOnlyHint true?): %v", n, toolNames(tools))
		}
		if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
			t.Errorf("files__%s annotations = %+v, want readOnlyHint true", n, tool.Annotations)
		}
	}
	for name, tool := range tools {
		if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
			t.Errorf("%s listed in read-only mode with annotations %+v", name, tool.Annotations)
		}
	}

	args := map[string]map[string]any{
		"write_file":       {"path": filepath.Join(dir, "a.txt"), "content": "overwritten"},
		"edit_file":        {"path": filepath.Join(dir, "a.txt"), "edits": []map[string]any{{"oldText": "content", "newText": "edited"}}},
		"create_directory": {"path": filepath.Join(dir, "newdir")},
		"move_file":        {"source": filepath.Join(dir, "a.txt"), "destination": filepath.Join(dir, "b.txt")},
	}
	for _, n := range fsWriteTools {
		t.Run(n, func(t *testing.T) {
			name := "files__" + n
			if tools[name] != nil {
				t.Errorf("%s listed in read-only mode", name)
			}
			ref := callRPCError(ctx, t, sp.cs, "files__no_such_tool", args[n])
			got := callRPCError(ctx, t, sp.cs, name, args[n])
			want := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: strings.ReplaceAll(ref.Message, "files__no_such_tool", name)}
			if ref.Code != jsonrpc.CodeInvalidParams {
				t.Errorf("unknown tool: code %d, want %d", ref.Code, jsonrpc.CodeInvalidParams)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("call %s: not the error of an unknown tool (-want +got):\n%s", name, diff)
			}
		})
	}
	if diff := cmp.Diff(before, snapshotDir(t, dir)); diff != "" {
		t.Errorf("the folder changed under read_only (-before +after):\n%s", diff)
	}

	res := call(ctx, t, sp.cs, "files__read_text_file", map[string]any{"path": filepath.Join(dir, "a.txt")})
	if got, want := text(res), "content of a\n"; got != want || res.IsError {
		t.Errorf("files__read_text_file = %q (isError %v), want %q", got, res.IsError, want)
	}
	res = call(ctx, t, sp.cs, "files__list_directory", map[string]any{"path": dir})
	if got := text(res); !strings.Contains(got, "a.txt") || res.IsError {
		t.Errorf("files__list_directory = %q (isError %v), want a listing with a.txt", got, res.IsError)
	}
}

// TestPolicyDenyGlobs checks the per-server allow and deny lists: tools
// (against server-filesystem, whose names suit globs), prompts and
// resources (against the fixture), including reads through a template.
func TestPolicyDenyGlobs(t *testing.T) {
	t.Parallel()
	t.Run("tools", func(t *testing.T) {
		t.Parallel()
		bin := nodeBin(t, "mcp-server-filesystem")
		dir, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		server := func(extra string) string {
			return fmt.Sprintf("[servers.files]\ncommand = %s\nargs = %s\n%s", tomlStr(bin), tomlStrs([]string{dir}), extra)
		}
		ctx := testCtx(t)
		all := toolNames(listTools(ctx, t, startStdio(t, writeConfig(t, server(""))).cs))
		if len(all) < 10 {
			t.Fatalf("server-filesystem lists only %v without a policy", all)
		}
		// filter returns the names of all whose original name matches one
		// of allow (or allow is empty) and none of deny.
		filter := func(allow, deny []string) []string {
			var out []string
			for _, n := range all {
				orig := strings.TrimPrefix(n, "files__")
				match := func(globs []string) bool {
					return slices.ContainsFunc(globs, func(g string) bool { ok, _ := path.Match(g, orig); return ok })
				}
				if match(deny) || len(allow) > 0 && !match(allow) {
					continue
				}
				out = append(out, n)
			}
			return out
		}
		tests := []struct {
			name        string
			allow, deny []string
			hidden      string // a tool that must be hidden
		}{
			{name: "deny", deny: []string{"*_file*"}, hidden: "files__write_file"},
			{name: "allow", allow: []string{"read_*"}, hidden: "files__list_directory"},
			{name: "deny wins", allow: []string{"read_*", "list_*"}, deny: []string{"*_file*"}, hidden: "files__read_text_file"},
			{name: "same glob", allow: []string{"read_text_file"}, deny: []string{"read_text_file"}, hidden: "files__read_text_file"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				var extra strings.Builder
				if tt.allow != nil {
					fmt.Fprintf(&extra, "tools.allow = %s\n", tomlStrs(tt.allow))
				}
				if tt.deny != nil {
					fmt.Fprintf(&extra, "tools.deny = %s\n", tomlStrs(tt.deny))
				}
				sp := startStdio(t, writeConfig(t, server(extra.String())))
				ctx := testCtx(t)
				got := toolNames(listTools(ctx, t, sp.cs))
				want := filter(tt.allow, tt.deny)
				if want == nil {
					want = []string{}
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("tools with allow %q deny %q (-want +got):\n%s", tt.allow, tt.deny, diff)
				}
				if slices.Contains(got, tt.hidden) {
					t.Errorf("%s listed", tt.hidden)
				}
				checkLikeUnknown(ctx, t, sp.cs, tt.hidden, "files__no_such_tool")
			})
		}
	})

	t.Run("prompts and resources", func(t *testing.T) {
		t.Parallel()
		cfg := fixture("alpha", nil,
			`prompts.deny = ["gre*"]`,
			`resources.deny = ["fixture://alpha/readme.txt", "fixture://alpha/secret*"]`,
		) + fixture("beta", nil)
		sp := startStdio(t, writeConfig(t, cfg))
		ctx := testCtx(t)

		var prompts []string
		for p, err := range sp.cs.Prompts(ctx, nil) {
			if err != nil {
				t.Fatalf("prompts/list: %v", err)
			}
			prompts = append(prompts, p.Name)
		}
		if diff := cmp.Diff([]string{"beta__greet"}, prompts); diff != "" {
			t.Errorf("prompts (-want +got):\n%s", diff)
		}
		args := map[string]string{"who": "you"}
		if _, err := sp.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "beta__greet", Arguments: args}); err != nil {
			t.Errorf("get beta__greet: %v", err)
		}
		_, refErr := sp.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "alpha__nosuch", Arguments: args})
		_, err := sp.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "alpha__greet", Arguments: args})
		var ref, got *jsonrpc.Error
		if !errors.As(refErr, &ref) || !errors.As(err, &got) {
			t.Fatalf("get alpha__greet: %v; get alpha__nosuch: %v; want JSON-RPC errors", err, refErr)
		}
		want := &jsonrpc.Error{Code: ref.Code, Message: strings.ReplaceAll(ref.Message, "alpha__nosuch", "alpha__greet")}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("get denied prompt alpha__greet: not the error of an unknown prompt (-want +got):\n%s", diff)
		}

		var uris []string
		for r, err := range sp.cs.Resources(ctx, nil) {
			if err != nil {
				t.Fatalf("resources/list: %v", err)
			}
			uris = append(uris, r.URI)
		}
		slices.Sort(uris)
		wantURIs := []string{"alpha+file:///shared/same.txt", "beta+file:///shared/same.txt", "beta+fixture://beta/readme.txt"}
		if diff := cmp.Diff(wantURIs, uris); diff != "" {
			t.Errorf("resources (-want +got):\n%s", diff)
		}
		var templates []string
		for rt, err := range sp.cs.ResourceTemplates(ctx, nil) {
			if err != nil {
				t.Fatalf("resources/templates/list: %v", err)
			}
			templates = append(templates, rt.URITemplate)
		}
		slices.Sort(templates)
		if diff := cmp.Diff([]string{"alpha+fixture://alpha/{file}", "beta+fixture://beta/{file}"}, templates); diff != "" {
			t.Errorf("resource templates (-want +got):\n%s", diff)
		}

		var notFound *jsonrpc.Error
		if !errors.As(mcp.ResourceNotFoundError("x"), &notFound) {
			t.Fatal("mcp.ResourceNotFoundError is not a *jsonrpc.Error")
		}
		reads := []struct {
			uri  string
			want string // "" for refused
		}{
			{uri: "alpha+fixture://alpha/readme.txt"},      // listed, denied
			{uri: "alpha+fixture://alpha/secret.txt"},      // template match, denied
			{uri: "alpha+fixture://alpha/secret/deep.txt"}, // template match, denied
			{uri: "alpha+fixture://alpha/other.txt", want: "template alpha other.txt"},
			{uri: "beta+fixture://beta/readme.txt", want: "readme of beta"},
			{uri: "beta+fixture://beta/secret.txt", want: "template beta secret.txt"},
		}
		for _, r := range reads {
			res, err := sp.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: r.uri})
			if r.want != "" {
				if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != r.want {
					t.Errorf("read %s = %+v, %v; want %q", r.uri, res, err, r.want)
				}
				continue
			}
			var rpcErr *jsonrpc.Error
			if !errors.As(err, &rpcErr) || rpcErr.Code != notFound.Code {
				t.Errorf("read denied %s = %+v, %v; want a resource-not-found error (code %d)", r.uri, res, err, notFound.Code)
			}
		}
	})
}

// TestPolicyOverride renames and relabels a tool, and checks that with
// annotations = "ignore" only overrides make a tool read-only.
func TestPolicyOverride(t *testing.T) {
	t.Parallel()
	override := []string{
		"[servers.alpha.overrides.echo]",
		`name = "say"`,
		`title = "Say it"`,
		`description = "Says the message back."`,
		`annotations = { readOnlyHint = true, destructiveHint = false }`,
	}
	t.Run("rename and relabel", func(t *testing.T) {
		t.Parallel()
		sp := startStdio(t, writeConfig(t, fixture("alpha", []string{"-tools", "echo,whoami"}, override...)))
		ctx := testCtx(t)
		tools := listTools(ctx, t, sp.cs)
		if diff := cmp.Diff([]string{"alpha__whoami", "say"}, toolNames(tools)); diff != "" {
			t.Errorf("tools (-want +got):\n%s", diff)
		}
		if say := tools["say"]; say != nil {
			f := false
			want := map[string]any{
				"title":       "Say it",
				"description": "Says the message back.",
				"annotations": asJSON(t, &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: &f}),
			}
			got := map[string]any{"title": say.Title, "description": say.Description, "annotations": asJSON(t, say.Annotations)}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("say (-want +got):\n%s", diff)
			}
		}
		if got := text(call(ctx, t, sp.cs, "say", map[string]any{"message": "hi"})); got != "alpha: hi" {
			t.Errorf("say = %q, want %q", got, "alpha: hi")
		}
		checkLikeUnknown(ctx, t, sp.cs, "alpha__echo", "alpha__nosuch")
	})

	tests := []struct {
		name        string
		annotations string
		want        []string
	}{
		// whoami's own readOnlyHint counts when annotations are trusted.
		{name: "trust", annotations: "trust", want: []string{"alpha__whoami", "say"}},
		{name: "ignore", annotations: "ignore", want: []string{"say"}},
	}
	for _, tt := range tests {
		t.Run("read_only "+tt.name, func(t *testing.T) {
			t.Parallel()
			extra := append([]string{"read_only = true", "annotations = " + tomlStr(tt.annotations)}, override...)
			sp := startStdio(t, writeConfig(t, fixture("alpha", nil, extra...)))
			ctx := testCtx(t)
			if diff := cmp.Diff(tt.want, toolNames(listTools(ctx, t, sp.cs))); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			if got := text(call(ctx, t, sp.cs, "say", map[string]any{"message": "ro"})); got != "alpha: ro" {
				t.Errorf("say = %q, want %q", got, "alpha: ro")
			}
			checkLikeUnknown(ctx, t, sp.cs, "alpha__big", "alpha__nosuch")
		})
	}
}

// TestPolicyFileReload edits a policy file while a client is connected: the
// hidden tool appears without a restart and the client is told; a broken
// file is rejected with its file:line and the rules in force stay.
func TestPolicyFileReload(t *testing.T) {
	t.Parallel()
	const deny = "[rules.no_echo]\nmatch = \"alpha__echo\"\ndeny = true\n"
	cfg := policyConfig(t, `policy_files = ["policy/*.toml"]`+"\n"+fixture("alpha", []string{"-tools", "echo,whoami,pid"}),
		map[string]string{"policy/base.toml": deny})
	changed := make(chan struct{}, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	sp := startStdioClient(t, cfg, client, protocolVersion)
	ctx := testCtx(t)
	if diff := cmp.Diff([]string{"alpha__pid", "alpha__whoami"}, toolNames(listTools(ctx, t, sp.cs))); diff != "" {
		t.Fatalf("tools under the deny rule (-want +got):\n%s", diff)
	}
	checkLikeUnknown(ctx, t, sp.cs, "alpha__echo", "alpha__nosuch")
	pid := text(call(ctx, t, sp.cs, "alpha__pid", nil))
	for len(changed) > 0 {
		<-changed
	}

	policyFile := filepath.Join(filepath.Dir(cfg), "policy", "base.toml")
	if err := os.WriteFile(policyFile, []byte("# no rules\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Error("no notifications/tools/list_changed within 10s of the policy edit")
	}
	waitFor(t, 10*time.Second, "alpha__echo listed after the policy edit", func() bool {
		return listTools(ctx, t, sp.cs)["alpha__echo"] != nil
	})
	if got := text(call(ctx, t, sp.cs, "alpha__echo", map[string]any{"message": "back"})); got != "alpha: back" {
		t.Errorf("alpha__echo after the edit = %q, want %q", got, "alpha: back")
	}
	if got := text(call(ctx, t, sp.cs, "alpha__pid", nil)); got != pid {
		t.Errorf("alpha's pid changed from %s to %s across a policy edit", pid, got)
	}

	// A broken file that would hide echo again: nothing of it applies.
	broken := deny + "\n[rules.bad]\nmatch = \"alpha__*\"\nrate = \"lots\"\n"
	badLine := lineOf(t, broken, "rate =")
	if err := os.WriteFile(policyFile, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	where := fmt.Sprintf("policy/base.toml:%d", badLine)
	waitFor(t, 10*time.Second, "the rejection of the broken policy file ("+where+") in the log", func() bool {
		return strings.Contains(sp.stderr.String(), where)
	})
	if listTools(ctx, t, sp.cs)["alpha__echo"] == nil {
		t.Error("alpha__echo hidden after a broken policy file; the previous rules should keep serving")
	}
	if got := text(call(ctx, t, sp.cs, "alpha__echo", map[string]any{"message": "still"})); got != "alpha: still" {
		t.Errorf("alpha__echo after the broken edit = %q, want %q", got, "alpha: still")
	}
}

// TestPolicyRate limits alpha__echo to 2 calls a minute: the third is a tool
// error saying when to retry; another tool is not limited.
func TestPolicyRate(t *testing.T) {
	t.Parallel()
	const rules = "[rules.slow]\nmatch = \"alpha__echo\"\nrate = \"2/minute\"\n"
	cfg := policyConfig(t, `policy_files = ["policy/*.toml"]`+"\n"+fixture("alpha", nil),
		map[string]string{"policy/limits.toml": rules})
	sp := startStdio(t, cfg)
	ctx := testCtx(t)
	for i := range 2 {
		res := call(ctx, t, sp.cs, "alpha__echo", map[string]any{"message": "hi"})
		if got := text(res); got != "alpha: hi" || res.IsError {
			t.Errorf("call %d = %q (isError %v), want %q", i+1, got, res.IsError, "alpha: hi")
		}
	}
	res := call(ctx, t, sp.cs, "alpha__echo", map[string]any{"message": "hi"})
	got := text(res)
	if !res.IsError || !strings.Contains(got, "rate limit") || !strings.Contains(got, "policy/limits.toml:1") {
		t.Fatalf("third call = %q (isError %v), want an isError rate limit naming policy/limits.toml:1", got, res.IsError)
	}
	_, after, ok := strings.Cut(got, "Retry in ")
	after, _, _ = strings.Cut(after, " ")
	wait, err := time.ParseDuration(strings.TrimRight(after, ".,;"))
	if !ok || err != nil || wait <= 0 || wait > time.Minute {
		t.Errorf("third call = %q; want \"Retry in D\" with 0 < D <= 1m (%v)", got, err)
	}
	for range 3 {
		if res := call(ctx, t, sp.cs, "alpha__whoami", nil); res.IsError {
			t.Errorf("alpha__whoami = %q, isError; it has no rate limit", text(res))
		}
	}
}

// TestPolicyCap cuts alpha__big's results to max_result_bytes: a larger
// result is shortened with a note on what was cut and how to get the rest;
// a smaller one is unchanged.
func TestPolicyCap(t *testing.T) {
	t.Parallel()
	const rules = "[rules.cap]\nmatch = \"alpha__big\"\nmax_result_bytes = 2000\n"
	cfg := policyConfig(t, `policy_files = ["policy/*.toml"]`+"\n"+fixture("alpha", nil),
		map[string]string{"policy/cap.toml": rules})
	sp := startStdio(t, cfg)
	ctx := testCtx(t)

	res := call(ctx, t, sp.cs, "alpha__big", map[string]any{"bytes": 100})
	if diff := cmp.Diff([]string{strings.Repeat("x", 100)}, texts(res.Content)); diff != "" || res.IsError {
		t.Errorf("big 100 under the cap (isError %v) (-want +got):\n%s", res.IsError, diff)
	}

	res = call(ctx, t, sp.cs, "alpha__big", map[string]any{"bytes": 10000})
	ts := texts(res.Content)
	if len(ts) != 2 {
		t.Fatalf("big 10000 over the cap: %d blocks %q, want the cut text and a note", len(ts), ts)
	}
	kept, note := ts[0], ts[1]
	if strings.Trim(kept, "x") != "" || len(kept) == 0 || len(kept) >= 2000 {
		t.Errorf("cut text has %d bytes (%.20q…), want 1 to 1999 'x'", len(kept), kept)
	}
	var shown, total, cut int
	if _, err := fmt.Sscanf(note, "[manifold: this result was cut: %d of %d bytes are shown, %d were cut", &shown, &total, &cut); err != nil {
		t.Fatalf("note %q: %v", note, err)
	}
	if shown != len(kept) || total <= 10000 || cut != total-shown {
		t.Errorf("note %q: shown %d, total %d, cut %d; want shown %d, total > 10000, cut = total - shown", note, shown, total, cut, len(kept))
	}
	for _, s := range []string{"max_result_bytes = 2000", "policy/cap.toml:1", "To get the rest"} {
		if !strings.Contains(note, s) {
			t.Errorf("note %q does not say %q", note, s)
		}
	}
	if n := len(kept) + len(note); n > 2000 {
		t.Errorf("cut result holds %d bytes of text, over max_result_bytes 2000", n)
	}
	if res.StructuredContent != nil {
		t.Errorf("cut result keeps structuredContent %v", res.StructuredContent)
	}
}

// auditLine is one line of the audit log, decoded.
type auditLine map[string]any

func readAudit(t *testing.T, file string) []auditLine {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	var out []auditLine
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l auditLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("audit line %q is not JSON: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

// TestPolicyAudit makes one allowed call, one of a hidden tool, one of an
// unknown tool, one that fails, one resource read and one prompt get, and
// checks the audit log has one line for each with the documented fields;
// argument values are logged redacted only with arguments = true.
func TestPolicyAudit(t *testing.T) {
	t.Parallel()
	for _, withArgs := range []bool{true, false} {
		t.Run(fmt.Sprintf("arguments=%v", withArgs), func(t *testing.T) {
			t.Parallel()
			audit := "[audit]\nfile = \"audit.jsonl\"\n"
			if withArgs {
				audit += "arguments = true\n"
			}
			cfg := policyConfig(t, audit+fixture("alpha", nil, `tools.deny = ["crash"]`)+fixture("beta", []string{"-tools", "echo"}), nil)
			denyLine := lineOf(t, mustRead(t, cfg), "tools.deny")
			sp := startStdio(t, cfg)
			ctx := testCtx(t)
			const secret, message = "sk-e2e-SECRET-value", "hello-audit"
			res := call(ctx, t, sp.cs, "alpha__args", map[string]any{"message": message, "api_key": secret})
			if res.IsError {
				t.Fatalf("alpha__args: %q", text(res))
			}
			callRPCError(ctx, t, sp.cs, "alpha__crash", map[string]any{"message": message})
			callRPCError(ctx, t, sp.cs, "alpha__nosuch", map[string]any{"message": message})
			if res := call(ctx, t, sp.cs, "alpha__fail", map[string]any{"message": message}); !res.IsError {
				t.Errorf("alpha__fail = %q, want isError", text(res))
			}
			if _, err := sp.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "alpha+fixture://alpha/readme.txt"}); err != nil {
				t.Errorf("read: %v", err)
			}
			if _, err := sp.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "alpha__greet", Arguments: map[string]string{"who": message}}); err != nil {
				t.Errorf("get prompt: %v", err)
			}
			if t.Failed() {
				return
			}
			file := filepath.Join(filepath.Dir(cfg), "audit.jsonl")
			lines := readAudit(t, file)

			// The fields each line must have, and the values to check.
			deny := fmt.Sprintf(`servers.alpha.tools.deny "crash" (%s:%d)`, cfg, denyLine)
			want := []auditLine{
				{"method": "tools/call", "exposed": "alpha__args", "original": "args", "server": "alpha", "decision": "allowed", "outcome": "ok"},
				{"method": "tools/call", "exposed": "alpha__crash", "decision": "denied", "rule": deny},
				{"method": "tools/call", "exposed": "alpha__nosuch", "decision": "denied", "outcome": "unknown tool"},
				{"method": "tools/call", "exposed": "alpha__fail", "original": "fail", "server": "alpha", "decision": "allowed", "outcome": "tool error"},
				{"method": "resources/read", "exposed": "alpha+fixture://alpha/readme.txt", "original": "fixture://alpha/readme.txt", "server": "alpha", "decision": "allowed", "outcome": "ok"},
				{"method": "prompts/get", "exposed": "alpha__greet", "original": "greet", "server": "alpha", "decision": "allowed", "outcome": "ok"},
			}
			if len(lines) != len(want) {
				t.Errorf("audit log has %d lines, want %d:\n%s", len(lines), len(want), mustRead(t, file))
			}
			for i := range min(len(lines), len(want)) {
				l := lines[i]
				for _, f := range []string{"time", "client", "method", "decision", "duration_ms", "outcome", "result_bytes"} {
					if _, ok := l[f]; !ok {
						t.Errorf("audit line %d %v lacks %q", i+1, l, f)
					}
				}
				if ts, _ := l["time"].(string); ts != "" {
					if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
						t.Errorf("audit line %d: time %q: %v", i+1, ts, err)
					}
				}
				if c := l["client"]; c != "e2e" {
					t.Errorf("audit line %d: client %v, want %q", i+1, c, "e2e")
				}
				got := auditLine{}
				for k := range want[i] {
					got[k] = l[k]
				}
				if diff := cmp.Diff(want[i], got); diff != "" {
					t.Errorf("audit line %d (-want +got):\n%s\nline: %v", i+1, diff, l)
				}
				if n, _ := l["result_bytes"].(float64); want[i]["decision"] == "allowed" && n <= 0 {
					t.Errorf("audit line %d: result_bytes %v, want > 0", i+1, l["result_bytes"])
				}
			}
			all := mustRead(t, file)
			if strings.Contains(all, secret) {
				t.Errorf("the audit log holds the api_key value:\n%s", all)
			}
			if !withArgs {
				if strings.Contains(all, message) || strings.Contains(all, `"arguments"`) {
					t.Errorf("the audit log holds arguments without arguments = true:\n%s", all)
				}
				return
			}
			if len(lines) > 0 {
				wantArgs := map[string]any{"message": message, "api_key": "[redacted]"}
				if diff := cmp.Diff(wantArgs, lines[0]["arguments"]); diff != "" {
					t.Errorf("arguments of alpha__args (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func mustRead(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// runIn runs manifold with args in dir and returns its stdout; it fails the
// test unless manifold exits 0.
func runIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	cmd := commandContext(ctx, manifoldBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MANIFOLD_CONFIG=", "XDG_CONFIG_HOME="+dir)
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("manifold %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String()
}

// TestPolicyCLIExplain checks that `manifold tools` gives each tool a
// verdict naming the rule and file:line that hid it, and that `manifold
// explain` explains one name, with the config named relative to the working
// folder and absolute.
func TestPolicyCLIExplain(t *testing.T) {
	t.Parallel()
	body := `policy_files = ["policy/*.toml"]` + "\n" + fixture("alpha", []string{"-tools", "echo,whoami,big,crash"}, `tools.deny = ["crash"]`)
	const rules = "[rules.no_echo]\nmatch = \"alpha__echo\"\ndeny = true\nreason = \"echo is noisy\"\n"
	cfg := policyConfig(t, body, map[string]string{"policy/base.toml": rules})
	dir := filepath.Dir(cfg)
	denyLine := lineOf(t, body, "tools.deny")
	for _, tt := range []struct{ name, config, shown string }{
		{name: "relative", config: "proxy.toml", shown: "proxy.toml"},
		{name: "absolute", config: cfg, shown: cfg},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			want := map[string]string{
				"alpha__echo":   `hidden: rule "no_echo" (policy/base.toml:1): echo is noisy`,
				"alpha__crash":  fmt.Sprintf(`hidden: servers.alpha.tools.deny "crash" (%s:%d)`, tt.shown, denyLine),
				"alpha__whoami": "exposed, read-only",
				"alpha__big":    "exposed",
			}
			// The table cuts long verdicts to fit 100 columns; --json
			// has every verdict in full.
			out := runIn(t, dir, "tools", "--json", "--config", tt.config)
			var listing struct {
				Catalog []struct {
					Kind, Exposed, Verdict string
					ReadOnly               bool `json:"read_only"`
				} `json:"catalog"`
			}
			if err := json.Unmarshal([]byte(out), &listing); err != nil {
				t.Fatalf("manifold tools --json: %v\n%s", err, out)
			}
			got := map[string]string{}
			for _, e := range listing.Catalog {
				if e.Kind == "tool" {
					got[e.Exposed] = e.Verdict
					if e.ReadOnly {
						got[e.Exposed] += ", read-only"
					}
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("manifold tools verdicts (-want +got):\n%s\noutput:\n%s", diff, out)
			}

			for _, e := range []struct{ name, want string }{
				{name: "alpha__echo", want: want["alpha__echo"]},
				{name: "alpha__crash", want: want["alpha__crash"]},
			} {
				out := runIn(t, dir, "explain", "--config", tt.config, e.name)
				if !strings.Contains(out, e.want) || !strings.Contains(out, e.name) {
					t.Errorf("manifold explain %s = %q, want it to say %q", e.name, out, e.want)
				}
			}
		})
	}
}
