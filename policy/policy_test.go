package policy

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func ptr(b bool) *bool { return &b }

func tool(server, original, exposed string, a *Annotations) Item {
	return Item{Kind: Tool, Server: server, Original: original, Exposed: exposed, Annotations: a}
}

// serverRules returns Rules with one server's rules.
func serverRules(name string, sr ServerRules) *Rules {
	return &Rules{Servers: map[string]*ServerRules{name: &sr}}
}

func TestDecide(t *testing.T) {
	readOnly := &Annotations{ReadOnly: ptr(true)}
	notReadOnly := &Annotations{ReadOnly: ptr(false)}
	lists := serverRules("files", ServerRules{
		Tools:     List{Allow: []Pattern{{Glob: "*_file", Source: "proxy.toml:3"}}, Deny: []Pattern{{Glob: "write_*", Source: "proxy.toml:4"}}},
		Prompts:   List{Deny: []Pattern{{Glob: "secret*", Source: "proxy.toml:5"}}},
		Resources: List{Deny: []Pattern{{Glob: "file:///secret/*", Source: "proxy.toml:6"}}},
	})
	resAllow := serverRules("files", ServerRules{
		Resources: List{Allow: []Pattern{{Glob: "file:///public/*", Source: "proxy.toml:6"}}},
	})
	roServer := serverRules("files", ServerRules{
		ReadOnly: true, ReadOnlySource: "proxy.toml:2",
		Overrides: map[string]Override{
			"stat":   {Annotations: &Annotations{ReadOnly: ptr(true)}, Source: "proxy.toml:20"},
			"delete": {Annotations: &Annotations{ReadOnly: ptr(false)}, Source: "proxy.toml:23"},
			"rename": {Name: "mv", Source: "proxy.toml:26"},
		},
	})
	ignoring := serverRules("files", ServerRules{
		ReadOnly: true, ReadOnlySource: "proxy.toml:2",
		IgnoreAnnotations: true, IgnoreAnnotationsSource: "proxy.toml:3",
		Overrides: map[string]Override{
			"read_file": {Annotations: &Annotations{ReadOnly: ptr(true)}, Source: "proxy.toml:20"},
		},
	})
	global := &Rules{ReadOnly: true, ReadOnlySource: "proxy.toml:1"}
	files := &Rules{FileRules: []Rule{
		{Name: "no_writes", Match: "files__write_*", Deny: true, Reason: "writes need review", Source: "policy/base.toml:7"},
		{Name: "log_writes", Match: "files__write_log", Allow: true, Source: "policy/base.toml:11"},
		{Name: "search", Match: "*__search*", Rate: Rate{N: 30, Per: time.Minute}, MaxResultBytes: 200000, CallTimeout: 20 * time.Second, Source: "policy/base.toml:14"},
		{Name: "search_fast", Match: "web__search*", Rate: Rate{N: 1, Per: time.Second}, CallTimeout: 5 * time.Second, MaxResultBytes: 500000, Source: "policy/web.toml:2"},
		{Name: "tight", Match: "web__search_news", Rate: Rate{N: 10, Per: time.Minute}, Source: "policy/web.toml:6"},
		{Name: "secrets", Match: "files+file:///secret/*", URI: true, Deny: true, Source: "policy/base.toml:20"},
		{Name: "logs_by_day", Match: "*_log", Deny: true, Reason: "first deny", Source: "policy/tie.toml:1"},
		{Name: "logs_named", Match: "log_*", Allow: true, Source: "policy/tie.toml:4"},
		{Name: "logs_again", Match: "*_log", Deny: true, Reason: "second deny", Source: "policy/tie.toml:7"},
	}}
	allowFiles := &Rules{FileRules: []Rule{
		{Name: "limit", Match: "*", CallTimeout: time.Second, Source: "policy/a.toml:1"},
		{Name: "nothing_else", Match: "*", Deny: true, Reason: "only files tools", Source: "policy/a.toml:3"},
		{Name: "only_files", Match: "files__*", Allow: true, Source: "policy/a.toml:6"},
		{Name: "no_uris", Match: "*", URI: true, Deny: true, Source: "policy/a.toml:9"},
		{Name: "docs", Match: "files+file:///docs/*", URI: true, Allow: true, Source: "policy/a.toml:12"},
		{Name: "docs_private", Match: "files+file:///docs/private/*", URI: true, Deny: true, Source: "policy/a.toml:15"},
	}}

	tests := []struct {
		name  string
		rules *Rules
		item  Item
		want  Decision
	}{
		{
			name:  "nil rules allow everything",
			rules: nil,
			item:  tool("files", "write_file", "files__write_file", nil),
			want:  Decision{Visible: true},
		},
		{
			name:  "empty rules allow everything",
			rules: &Rules{},
			item:  tool("files", "write_file", "files__write_file", nil),
			want:  Decision{Visible: true},
		},
		{
			name:  "invalid kind is hidden",
			rules: &Rules{},
			item:  Item{Server: "files", Original: "x"},
			want:  Decision{Rule: "unknown item kind", Reason: "Kind(0) is not a tool, prompt, resource or resource template"},
		},
		{
			name:  "tool denied by the server's deny list",
			rules: lists,
			item:  tool("files", "write_file", "files__write_file", nil),
			want:  Decision{Rule: `servers.files.tools.deny "write_*"`, Source: "proxy.toml:4"},
		},
		{
			name:  "deny wins over allow",
			rules: serverRules("files", ServerRules{Tools: List{Allow: []Pattern{{Glob: "*", Source: "proxy.toml:3"}}, Deny: []Pattern{{Glob: "write_file", Source: "proxy.toml:4"}}}}),
			item:  tool("files", "write_file", "files__write_file", nil),
			want:  Decision{Rule: `servers.files.tools.deny "write_file"`, Source: "proxy.toml:4"},
		},
		{
			name:  "tool outside the allow list is hidden",
			rules: lists,
			item:  tool("files", "list_dir", "files__list_dir", nil),
			want:  Decision{Rule: "servers.files.tools.allow", Source: "proxy.toml:3", Reason: `"list_dir" matches none of its patterns`},
		},
		{
			name:  "tool in the allow list is visible",
			rules: lists,
			item:  tool("files", "read_file", "files__read_file", nil),
			want:  Decision{Visible: true},
		},
		{
			name:  "lists match the original name, not the exposed one",
			rules: lists,
			item:  tool("files", "read_file", "write_file", nil),
			want:  Decision{Visible: true},
		},
		{
			name:  "another server's lists do not apply",
			rules: lists,
			item:  tool("web", "write_file", "web__write_file", nil),
			want:  Decision{Visible: true},
		},
		{
			name: "a plugin's rules are cited by its table",
			rules: serverRules("iban", ServerRules{Key: "plugins.iban", ReadOnly: true, ReadOnlySource: "proxy.toml:30",
				Tools: List{Deny: []Pattern{{Glob: "debug*", Source: "proxy.toml:31"}}}}),
			item: tool("iban", "debug_dump", "iban__debug_dump", nil),
			want: Decision{Rule: `plugins.iban.tools.deny "debug*"`, Source: "proxy.toml:31"},
		},
		{
			name:  "a plugin's read-only mode is cited by its table",
			rules: serverRules("iban", ServerRules{Key: "plugins.iban", ReadOnly: true, ReadOnlySource: "proxy.toml:30"}),
			item:  tool("iban", "check", "iban__check", &Annotations{ReadOnly: ptr(false)}),
			want:  Decision{Rule: "plugins.iban.read_only", Source: "proxy.toml:30", Reason: "the upstream's readOnlyHint is false"},
		},
		{
			name:  "prompt denied",
			rules: lists,
			item:  Item{Kind: Prompt, Server: "files", Original: "secret_plan", Exposed: "files__secret_plan"},
			want:  Decision{Rule: `servers.files.prompts.deny "secret*"`, Source: "proxy.toml:5"},
		},
		{
			name:  "prompt lists are not tool lists",
			rules: lists,
			item:  Item{Kind: Prompt, Server: "files", Original: "write_summary", Exposed: "files__write_summary"},
			want:  Decision{Visible: true},
		},
		{
			name:  "resource denied by original URI across slashes",
			rules: lists,
			item:  Item{Kind: Resource, Server: "files", Original: "file:///secret/a/b.txt", Exposed: "files+file:///secret/a/b.txt"},
			want:  Decision{Rule: `servers.files.resources.deny "file:///secret/*"`, Source: "proxy.toml:6"},
		},
		{
			name:  "resource outside the deny list",
			rules: lists,
			item:  Item{Kind: Resource, Server: "files", Original: "file:///public/a.txt", Exposed: "files+file:///public/a.txt"},
			want:  Decision{Visible: true},
		},
		{
			name:  "resource made from a template is decided by its URI",
			rules: lists,
			item:  Item{Kind: Resource, Server: "files", Original: "file:///secret/x", Exposed: "files+file:///secret/x"},
			want:  Decision{Rule: `servers.files.resources.deny "file:///secret/*"`, Source: "proxy.toml:6"},
		},
		{
			name:  "template matched as written: a general template survives a narrow deny",
			rules: lists,
			item:  Item{Kind: Template, Server: "files", Original: "file:///{path}", Exposed: "files+file:///{path}"},
			want:  Decision{Visible: true},
		},
		{
			name:  "template matched as written: a template under a denied folder is hidden",
			rules: lists,
			item:  Item{Kind: Template, Server: "files", Original: "file:///secret/{name}", Exposed: "files+file:///secret/{name}"},
			want:  Decision{Rule: `servers.files.resources.deny "file:///secret/*"`, Source: "proxy.toml:6"},
		},
		{
			name:  "template under an allowed folder is visible",
			rules: resAllow,
			item:  Item{Kind: Template, Server: "files", Original: "file:///public/{path}", Exposed: "files+file:///public/{path}"},
			want:  Decision{Visible: true},
		},
		{
			name:  "template wider than the allow list is hidden",
			rules: resAllow,
			item:  Item{Kind: Template, Server: "files", Original: "file:///{path}", Exposed: "files+file:///{path}"},
			want:  Decision{Rule: "servers.files.resources.allow", Source: "proxy.toml:6", Reason: `"file:///{path}" matches none of its patterns`},
		},

		// Read-only mode.
		{
			name:  "read-only server: annotated read-only tool is visible",
			rules: roServer,
			item:  tool("files", "read_file", "files__read_file", readOnly),
			want:  Decision{Visible: true, ReadOnly: true, ReadOnlyFrom: "upstream annotations"},
		},
		{
			name:  "read-only server: unannotated tool is hidden",
			rules: roServer,
			item:  tool("files", "write_file", "files__write_file", nil),
			want: Decision{Rule: "servers.files.read_only", Source: "proxy.toml:2",
				Reason: "the upstream sets no readOnlyHint, which means false; add an override with annotations = { readOnlyHint = true } if the tool only reads"},
		},
		{
			name:  "read-only server: annotations without readOnlyHint are hidden",
			rules: roServer,
			item:  tool("files", "write_file", "files__write_file", &Annotations{Title: "Write", Destructive: ptr(false)}),
			want: Decision{Rule: "servers.files.read_only", Source: "proxy.toml:2",
				Reason: "the upstream sets no readOnlyHint, which means false; add an override with annotations = { readOnlyHint = true } if the tool only reads"},
		},
		{
			name:  "read-only server: readOnlyHint false is hidden",
			rules: roServer,
			item:  tool("files", "write_file", "files__write_file", notReadOnly),
			want:  Decision{Rule: "servers.files.read_only", Source: "proxy.toml:2", Reason: "the upstream's readOnlyHint is false"},
		},
		{
			name:  "read-only server: override makes an unannotated tool read-only",
			rules: roServer,
			item:  tool("files", "stat", "files__stat", nil),
			want:  Decision{Visible: true, ReadOnly: true, ReadOnlyFrom: "override at proxy.toml:20"},
		},
		{
			name:  "read-only server: override corrects a false claim",
			rules: roServer,
			item:  tool("files", "delete", "files__delete", readOnly),
			want:  Decision{Rule: "servers.files.read_only", Source: "proxy.toml:2", Reason: "readOnlyHint is false in the override at proxy.toml:23"},
		},
		{
			name:  "read-only server: an override without annotations keeps the upstream's",
			rules: roServer,
			item:  tool("files", "rename", "mv", readOnly),
			want:  Decision{Visible: true, ReadOnly: true, ReadOnlyFrom: "upstream annotations"},
		},
		{
			name:  "read-only does not apply to prompts",
			rules: roServer,
			item:  Item{Kind: Prompt, Server: "files", Original: "p", Exposed: "files__p"},
			want:  Decision{Visible: true},
		},
		{
			name:  "read-only does not apply to resources",
			rules: global,
			item:  Item{Kind: Resource, Server: "files", Original: "file:///a", Exposed: "files+file:///a"},
			want:  Decision{Visible: true},
		},
		{
			name:  "ignored annotations: the upstream's claim does not count",
			rules: ignoring,
			item:  tool("files", "stat", "files__stat", readOnly),
			want: Decision{Rule: "servers.files.read_only", Source: "proxy.toml:2",
				Reason: `the server's annotations are ignored (proxy.toml:3) and no override sets readOnlyHint; add one with annotations = { readOnlyHint = true } if the tool only reads`},
		},
		{
			name:  "ignored annotations: an override counts",
			rules: ignoring,
			item:  tool("files", "read_file", "files__read_file", notReadOnly),
			want:  Decision{Visible: true, ReadOnly: true, ReadOnlyFrom: "override at proxy.toml:20"},
		},
		{
			name:  "global read-only hides an unannotated tool of any server",
			rules: global,
			item:  tool("web", "fetch", "web__fetch", nil),
			want: Decision{Rule: "read_only", Source: "proxy.toml:1",
				Reason: "the upstream sets no readOnlyHint, which means false; add an override with annotations = { readOnlyHint = true } if the tool only reads"},
		},
		{
			name:  "global read-only shows a read-only tool",
			rules: global,
			item:  tool("web", "fetch", "web__fetch", readOnly),
			want:  Decision{Visible: true, ReadOnly: true, ReadOnlyFrom: "upstream annotations"},
		},
		{
			name: "server read-only is cited before the global one",
			rules: &Rules{ReadOnly: true, ReadOnlySource: "proxy.toml:1", Servers: map[string]*ServerRules{
				"files": {ReadOnly: true, ReadOnlySource: "proxy.toml:9"},
			}},
			item: tool("files", "w", "files__w", notReadOnly),
			want: Decision{Rule: "servers.files.read_only", Source: "proxy.toml:9", Reason: "the upstream's readOnlyHint is false"},
		},

		// Policy files.
		{
			name:  "file rule denies by exposed name with its reason",
			rules: files,
			item:  tool("files", "write_file", "files__write_file", nil),
			want:  Decision{Rule: `rule "no_writes"`, Source: "policy/base.toml:7", Reason: "writes need review"},
		},
		{
			name:  "file rule denies a renamed tool by its qualified name",
			rules: files,
			item:  Item{Kind: Tool, Server: "files", Original: "write_file", Exposed: "save_it", Qualified: "files__write_file"},
			want:  Decision{Rule: `rule "no_writes"`, Source: "policy/base.toml:7", Reason: "writes need review"},
		},
		{
			name:  "file rule denies a renamed tool by its exposed name",
			rules: &Rules{FileRules: []Rule{{Name: "no_save", Match: "save_*", Deny: true, Source: "policy/b.toml:1"}}},
			item:  Item{Kind: Tool, Server: "files", Original: "write_file", Exposed: "save_it", Qualified: "files__write_file"},
			want:  Decision{Rule: `rule "no_save"`, Source: "policy/b.toml:1"},
		},
		{
			name:  "limits follow a renamed tool's qualified name",
			rules: files,
			item:  Item{Kind: Tool, Server: "web", Original: "search", Exposed: "find", Qualified: "web__search"},
			want: Decision{Visible: true, Limits: Limits{CallTimeout: 5 * time.Second, CallTimeoutSource: "policy/web.toml:2",
				MaxResultBytes: 200000, MaxResultBytesSource: "policy/base.toml:14", Rate: Rate{N: 30, Per: time.Minute}, RateSource: "policy/base.toml:14"}},
		},
		{
			name:  "file rule denies a shortened tool by its full name",
			rules: files,
			item:  Item{Kind: Tool, Server: "files", Original: "write_file", Exposed: "files__wri-0123abcd", Full: "files__write_file"},
			want:  Decision{Rule: `rule "no_writes"`, Source: "policy/base.toml:7", Reason: "writes need review"},
		},
		{
			name:  "file rule on a prefix's namespace denies a tool whose prefix was cut",
			rules: &Rules{FileRules: []Rule{{Name: "no_long", Match: "a_rather_long_prefix_name__*", Deny: true, Source: "policy/b.toml:1"}}},
			item:  Item{Kind: Tool, Server: "long", Original: "echo", Exposed: "a_rather_lo-0123abcd", Full: "a_rather_long_prefix_name__echo"},
			want:  Decision{Rule: `rule "no_long"`, Source: "policy/b.toml:1"},
		},
		{
			name:  "file rule denies a shortened prompt by its full name",
			rules: &Rules{FileRules: []Rule{{Name: "no_080", Match: "*_080", Deny: true, Source: "policy/b.toml:1"}}},
			item:  Item{Kind: Prompt, Server: "fx", Original: "a_long_prompt_080", Exposed: "fx__a_lo-0123abcd", Full: "fx__a_long_prompt_080"},
			want:  Decision{Rule: `rule "no_080"`, Source: "policy/b.toml:1"},
		},
		{
			name:  "limits follow a shortened tool's full name",
			rules: files,
			item:  Item{Kind: Tool, Server: "web", Original: "search", Exposed: "web__s-0123abcd", Full: "web__search"},
			want: Decision{Visible: true, Limits: Limits{CallTimeout: 5 * time.Second, CallTimeoutSource: "policy/web.toml:2",
				MaxResultBytes: 200000, MaxResultBytesSource: "policy/base.toml:14", Rate: Rate{N: 30, Per: time.Minute}, RateSource: "policy/base.toml:14"}},
		},
		{
			name:  "a more specific allow wins over a deny",
			rules: files,
			item:  tool("files", "write_log", "files__write_log", nil),
			want:  Decision{Visible: true, Rule: `rule "log_writes"`, Source: "policy/base.toml:11"},
		},
		{
			name:  "deny wins over an equally specific allow, and the first deny is cited",
			rules: files,
			item:  tool("x", "log_x_log", "log_x_log", nil),
			want:  Decision{Rule: `rule "logs_by_day"`, Source: "policy/tie.toml:1", Reason: "first deny"},
		},
		{
			name:  "file rules match the exposed name, not the original",
			rules: files,
			item:  tool("files", "files__write_file", "fs__write_file", nil),
			want:  Decision{Visible: true},
		},
		{
			name:  "file rule by name applies to prompts",
			rules: files,
			item:  Item{Kind: Prompt, Server: "files", Original: "write_x", Exposed: "files__write_x"},
			want:  Decision{Rule: `rule "no_writes"`, Source: "policy/base.toml:7", Reason: "writes need review"},
		},
		{
			name:  "file rule denies by exposed URI",
			rules: files,
			item:  Item{Kind: Resource, Server: "files", Original: "file:///secret/k", Exposed: "files+file:///secret/k"},
			want:  Decision{Rule: `rule "secrets"`, Source: "policy/base.toml:20"},
		},
		{
			name:  "URI rules do not match names",
			rules: &Rules{FileRules: []Rule{{Name: "u", Match: "*", URI: true, Deny: true, Source: "p.toml:1"}}},
			item:  tool("files", "x", "files__x", nil),
			want:  Decision{Visible: true},
		},
		{
			name:  "name rules do not match URIs",
			rules: &Rules{FileRules: []Rule{{Name: "n", Match: "*", Deny: true, Source: "p.toml:1"}}},
			item:  Item{Kind: Template, Server: "files", Original: "file:///{p}", Exposed: "files+file:///{p}"},
			want:  Decision{Visible: true},
		},
		{
			name:  "limits of one rule",
			rules: files,
			item:  tool("files", "search", "files__search", nil),
			want: Decision{Visible: true, Limits: Limits{
				CallTimeout: 20 * time.Second, CallTimeoutSource: "policy/base.toml:14",
				MaxResultBytes: 200000, MaxResultBytesSource: "policy/base.toml:14",
				Rate: Rate{N: 30, Per: time.Minute}, RateSource: "policy/base.toml:14",
			}},
		},
		{
			name:  "limits combine by taking the strictest of each",
			rules: files,
			item:  tool("web", "search_news", "web__search_news", nil),
			want: Decision{Visible: true, Limits: Limits{
				CallTimeout: 5 * time.Second, CallTimeoutSource: "policy/web.toml:2",
				MaxResultBytes: 200000, MaxResultBytesSource: "policy/base.toml:14",
				Rate: Rate{N: 10, Per: time.Minute}, RateSource: "policy/web.toml:6",
			}},
		},
		{
			name:  "deny * and an allow make an allow list for names",
			rules: allowFiles,
			item:  tool("web", "fetch", "web__fetch", nil),
			want:  Decision{Rule: `rule "nothing_else"`, Source: "policy/a.toml:3", Reason: "only files tools"},
		},
		{
			name:  "an allowed name gets the limits of every matching rule",
			rules: allowFiles,
			item:  tool("files", "read", "files__read", nil),
			want: Decision{Visible: true, Rule: `rule "only_files"`, Source: "policy/a.toml:6",
				Limits: Limits{CallTimeout: time.Second, CallTimeoutSource: "policy/a.toml:1"}},
		},
		{
			name:  "deny * and an allow make an allow list for URIs",
			rules: allowFiles,
			item:  Item{Kind: Resource, Server: "files", Original: "file:///etc/passwd", Exposed: "files+file:///etc/passwd"},
			want:  Decision{Rule: `rule "no_uris"`, Source: "policy/a.toml:9"},
		},
		{
			name:  "an allowed URI",
			rules: allowFiles,
			item:  Item{Kind: Resource, Server: "files", Original: "file:///docs/a", Exposed: "files+file:///docs/a"},
			want:  Decision{Visible: true, Rule: `rule "docs"`, Source: "policy/a.toml:12"},
		},
		{
			name:  "a more specific deny inside an allowed folder",
			rules: allowFiles,
			item:  Item{Kind: Resource, Server: "files", Original: "file:///docs/private/a", Exposed: "files+file:///docs/private/a"},
			want:  Decision{Rule: `rule "docs_private"`, Source: "policy/a.toml:15"},
		},
		{
			name:  "a file allow never shows what the server's lists hid",
			rules: &Rules{Servers: lists.Servers, FileRules: allowFiles.FileRules},
			item:  tool("files", "write_file", "files__write_file", nil),
			want:  Decision{Rule: `servers.files.tools.deny "write_*"`, Source: "proxy.toml:4"},
		},
		{
			name: "a file allow never shows what read-only mode hid",
			rules: &Rules{ReadOnly: true, ReadOnlySource: "proxy.toml:1",
				FileRules: []Rule{{Name: "all", Match: "*", Allow: true, Source: "p.toml:1"}}},
			item: tool("files", "x", "files__x", nil),
			want: Decision{Rule: "read_only", Source: "proxy.toml:1",
				Reason: "the upstream sets no readOnlyHint, which means false; add an override with annotations = { readOnlyHint = true } if the tool only reads"},
		},
		{
			name:  "empty exposed name falls back to the original",
			rules: files,
			item:  tool("", "files__write_file", "", nil),
			want:  Decision{Rule: `rule "no_writes"`, Source: "policy/base.toml:7", Reason: "writes need review"},
		},
		{
			name: "server lists are cited before read-only and the policy files",
			rules: &Rules{ReadOnly: true, ReadOnlySource: "proxy.toml:1",
				Servers:   map[string]*ServerRules{"files": {Tools: List{Deny: []Pattern{{Glob: "*", Source: "proxy.toml:4"}}}}},
				FileRules: []Rule{{Name: "d", Match: "*", Deny: true, Source: "p.toml:1"}}},
			item: tool("files", "x", "files__x", nil),
			want: Decision{Rule: `servers.files.tools.deny "*"`, Source: "proxy.toml:4"},
		},
		{
			name: "read-only is cited before the policy files",
			rules: &Rules{ReadOnly: true, ReadOnlySource: "proxy.toml:1",
				FileRules: []Rule{{Name: "d", Match: "*", Deny: true, Source: "p.toml:1"}}},
			item: tool("files", "x", "files__x", notReadOnly),
			want: Decision{Rule: "read_only", Source: "proxy.toml:1", Reason: "the upstream's readOnlyHint is false"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.rules.Decide(tt.item)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Decide(%+v) (-want +got):\n%s", tt.item, diff)
			}
		})
	}
}

func TestAnnotations(t *testing.T) {
	upstream := &Annotations{Title: "Read", ReadOnly: ptr(false), Destructive: ptr(true), OpenWorld: ptr(false)}
	overrides := map[string]Override{
		"read": {Annotations: &Annotations{Title: "Read a file", ReadOnly: ptr(true), Destructive: ptr(false)}, Source: "proxy.toml:9"},
		"name": {Name: "renamed", Source: "proxy.toml:12"},
	}
	trusting := serverRules("files", ServerRules{Overrides: overrides})
	ignoring := serverRules("files", ServerRules{IgnoreAnnotations: true, Overrides: overrides})

	tests := []struct {
		name     string
		rules    *Rules
		original string
		upstream *Annotations
		want     *Annotations
	}{
		{name: "nil rules keep the upstream's", rules: nil, original: "read", upstream: upstream, want: upstream},
		{name: "nil upstream and no override", rules: trusting, original: "other", upstream: nil, want: nil},
		{
			name: "override replaces the hints it sets", rules: trusting, original: "read", upstream: upstream,
			want: &Annotations{Title: "Read a file", ReadOnly: ptr(true), Destructive: ptr(false), OpenWorld: ptr(false)},
		},
		{
			name: "override on an unannotated tool", rules: trusting, original: "read", upstream: nil,
			want: &Annotations{Title: "Read a file", ReadOnly: ptr(true), Destructive: ptr(false)},
		},
		{name: "override without annotations keeps the upstream's", rules: trusting, original: "name", upstream: upstream, want: upstream},
		{name: "ignored annotations keep only the title", rules: ignoring, original: "other", upstream: upstream, want: &Annotations{Title: "Read"}},
		{name: "ignored annotations with nothing left", rules: ignoring, original: "other", upstream: &Annotations{ReadOnly: ptr(true)}, want: nil},
		{
			name: "ignored annotations with an override", rules: ignoring, original: "read", upstream: upstream,
			want: &Annotations{Title: "Read a file", ReadOnly: ptr(true), Destructive: ptr(false)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.rules.Annotations("files", tt.original, tt.upstream)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Annotations (-want +got):\n%s", diff)
			}
			again := tt.rules.Annotations("files", tt.original, got)
			if diff := cmp.Diff(got, again); diff != "" {
				t.Errorf("Annotations is not idempotent (-once +twice):\n%s", diff)
			}
			if got != nil && (got == tt.upstream || got.ReadOnly != nil && tt.upstream != nil && got.ReadOnly == tt.upstream.ReadOnly) {
				t.Errorf("Annotations shares memory with its input")
			}
		})
	}
}

func TestOverride(t *testing.T) {
	o := Override{Name: "mv", Title: "Move", Description: "Moves a file.", Source: "proxy.toml:12"}
	rules := serverRules("files", ServerRules{Overrides: map[string]Override{"rename": o}})
	tests := []struct {
		name             string
		rules            *Rules
		server, original string
		want             Override
		wantOK           bool
	}{
		{name: "found", rules: rules, server: "files", original: "rename", want: o, wantOK: true},
		{name: "other tool", rules: rules, server: "files", original: "move"},
		{name: "other server", rules: rules, server: "web", original: "rename"},
		{name: "nil rules", rules: nil, server: "files", original: "rename"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.rules.Override(tt.server, tt.original)
			if ok != tt.wantOK {
				t.Errorf("Override ok = %v, want %v", ok, tt.wantOK)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Override (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecisionString(t *testing.T) {
	tests := []struct {
		name string
		d    Decision
		want string
	}{
		{name: "exposed", d: Decision{Visible: true}, want: "exposed"},
		{
			name: "denied by a server list",
			d:    Decision{Rule: `servers.files.tools.deny "write_*"`, Source: "proxy.toml:12"},
			want: `hidden: servers.files.tools.deny "write_*" (proxy.toml:12)`,
		},
		{
			name: "denied by a policy file rule with a reason",
			d:    Decision{Rule: `rule "no_writes"`, Source: "policy/base.toml:7", Reason: "writes need review"},
			want: `hidden: rule "no_writes" (policy/base.toml:7): writes need review`,
		},
		{
			name: "hidden without a source",
			d:    Decision{Rule: "unknown item kind", Reason: "Kind(0) is not a tool"},
			want: "hidden: unknown item kind: Kind(0) is not a tool",
		},
		{
			name: "allowed by a rule",
			d:    Decision{Visible: true, Rule: `rule "log_writes"`, Source: "policy/base.toml:11"},
			want: `exposed by rule "log_writes" (policy/base.toml:11)`,
		},
		{
			name: "read-only",
			d:    Decision{Visible: true, ReadOnly: true, ReadOnlyFrom: "override at proxy.toml:20"},
			want: "exposed; read-only (readOnlyHint from override at proxy.toml:20)",
		},
		{
			name: "limits",
			d: Decision{Visible: true, ReadOnly: true, ReadOnlyFrom: "upstream annotations", Limits: Limits{
				CallTimeout: 20 * time.Second, CallTimeoutSource: "policy/base.toml:14",
				MaxResultBytes: 200000, MaxResultBytesSource: "policy/base.toml:14",
				Rate: Rate{N: 30, Per: time.Minute}, RateSource: "policy/web.toml:2",
			}},
			want: "exposed; read-only (readOnlyHint from upstream annotations); call_timeout 20s (policy/base.toml:14); " +
				"max_result_bytes 200000 (policy/base.toml:14); rate 30/minute (policy/web.toml:2)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.d.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSpecificity(t *testing.T) {
	tests := []struct {
		pattern string
		want    int
	}{
		{"", 0},
		{"*", 0},
		{"?*?", 0},
		{"[a-z]*", 0},
		{"files__write_*", 13},
		{"files__write_log", 16},
		{`a\*b`, 3},
		{"café*", 4},
		{"*__search*", 8},
	}
	for _, tt := range tests {
		if got := specificity(tt.pattern); got != tt.want {
			t.Errorf("specificity(%q) = %d, want %d", tt.pattern, got, tt.want)
		}
	}
}

// FuzzDecide builds small rules from the input and checks the invariants
// that matter whatever the rules: a denied item is never visible (unless a
// more specific policy file rule allows it), and a visible tool in
// read-only mode is read-only by its effective annotations.
func FuzzDecide(f *testing.F) {
	f.Add("write_*", "*_file", "files__w*", "files__write_log", "write_file", "files__write_file", uint8(0), uint8(0b1111), false, false)
	f.Add("", "read*", "", "", "read_file", "fs__read", uint8(0), uint8(0b1000_0011), true, false)
	f.Add("file:///s/*", "", "x+file:///*", "x+file:///s/*", "file:///s/a", "x+file:///s/a", uint8(2), uint8(0), false, true)
	f.Add("", "", "", "*", "stat", "files__stat", uint8(0), uint8(0b0101_0100), false, true)
	f.Fuzz(func(t *testing.T, deny, allow, fileDeny, fileAllow, original, exposed string, kind, flags uint8, globalRO, uriRules bool) {
		k := Kind(kind%4) + Tool
		sr := &ServerRules{
			ReadOnly:          flags&1 != 0,
			IgnoreAnnotations: flags&2 != 0,
			Overrides:         map[string]Override{},
		}
		list := List{Deny: []Pattern{{Glob: deny, Source: "proxy.toml:1"}}}
		if allow != "" {
			list.Allow = []Pattern{{Glob: allow, Source: "proxy.toml:2"}}
		}
		switch k {
		case Tool:
			sr.Tools = list
		case Prompt:
			sr.Prompts = list
		default:
			sr.Resources = list
		}
		if flags&4 != 0 {
			sr.Overrides[original] = Override{Annotations: &Annotations{ReadOnly: ptr(flags&8 != 0)}, Source: "proxy.toml:3"}
		}
		var upstream *Annotations
		if flags&16 != 0 {
			upstream = &Annotations{}
			if flags&32 != 0 {
				upstream.ReadOnly = ptr(flags&64 != 0)
			}
		}
		rules := &Rules{
			ReadOnly: globalRO,
			Servers:  map[string]*ServerRules{"s": sr},
			FileRules: []Rule{
				{Name: "d", Match: fileDeny, URI: uriRules, Deny: true, Source: "p.toml:1"},
				{Name: "a", Match: fileAllow, URI: uriRules, Allow: true, Source: "p.toml:3"},
				{Name: "l", Match: "*", Rate: Rate{N: 1, Per: time.Second}, Source: "p.toml:5"},
			},
		}
		it := Item{Kind: k, Server: "s", Original: original, Exposed: exposed, Annotations: upstream}
		d := rules.Decide(it)
		if d.String() == "" {
			t.Error("empty explanation")
		}
		e := exposed
		if e == "" {
			e = original
		}
		isURI := k == Resource || k == Template
		denied := isURI == uriRules && Match(fileDeny, e)
		rescued := denied && Match(fileAllow, e) && specificity(fileAllow) > specificity(fileDeny)
		if !d.Visible {
			if d.Rule == "" {
				t.Errorf("hidden without a rule: %#v", d)
			}
			if d.Rule == `rule "d"` && (!denied || rescued) {
				t.Errorf("hidden by the deny rule %q although it does not decide for %q: %v", fileDeny, e, d)
			}
			return
		}
		if Match(deny, original) {
			t.Errorf("%v visible although its original %q matches the deny glob %q: %v", k, original, deny, d)
		}
		if allow != "" && !Match(allow, original) {
			t.Errorf("%v visible although its original %q does not match the allow glob %q: %v", k, original, allow, d)
		}
		if denied && !rescued {
			t.Errorf("%v visible although its exposed %q matches the deny rule %q and no more specific allow: %v", k, e, fileDeny, d)
		}
		if k == Tool && (globalRO || sr.ReadOnly) {
			if !rules.Annotations("s", original, upstream).ReadOnlyHint() {
				t.Errorf("tool visible in read-only mode without an effective readOnlyHint: %v", d)
			}
			if !d.ReadOnly {
				t.Errorf("tool visible in read-only mode without ReadOnly set: %v", d)
			}
		}
		// The catch-all limit rule matches names only.
		if got, want := !d.Limits.Rate.IsZero(), k == Tool || k == Prompt; got != want {
			t.Errorf("%v: catch-all limit applied = %v, want %v: %v", k, got, want, d)
		}
	})
}
