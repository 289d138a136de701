package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/manifold-mcp/manifold/policy"
)

func ptr(b bool) *bool { return &b }

// policyPart is what the policy keys of proxy.toml decode into.
type policyPart struct {
	Policy      *policy.Rules
	PolicyFiles []string
	Audit       Audit
}

func TestParsePolicy(t *testing.T) {
	const file = "/etc/manifold/proxy.toml"
	tests := []struct {
		name string
		doc  string
		env  map[string]string
		want policyPart
	}{
		{
			name: "no policy keys",
			doc:  "[servers.a]\ncommand = \"a\"\nannotations = \"trust\"\n",
			want: policyPart{},
		},
		{
			name: "globals",
			doc: `read_only = true
policy_files = ["policy/*.toml", "/srv/extra.toml", "${POLICY_DIR}/x.toml"]

[audit]
file = "logs/audit.jsonl"
arguments = true
`,
			env: map[string]string{"POLICY_DIR": "/opt/p"},
			want: policyPart{
				Policy:      &policy.Rules{ReadOnly: true, ReadOnlySource: file + ":1"},
				PolicyFiles: []string{"/etc/manifold/policy/*.toml", "/srv/extra.toml", "/opt/p/x.toml"},
				Audit:       Audit{Enabled: true, File: "/etc/manifold/logs/audit.jsonl", Arguments: true},
			},
		},
		{
			name: "read_only = false and empty policy_files set nothing",
			doc:  "read_only = false\npolicy_files = []\n",
			want: policyPart{},
		},
		{
			name: "server lists, read-only, ignored annotations and overrides",
			doc: `[servers.files]
command = "npx"
read_only = true
annotations = "ignore"
tools.allow = ["read_*", "list_*"]
tools.deny = ["*delete*"]
resources = { deny = ["file:///secret/*"] }

[servers.files.prompts]
allow = ["summarize"]

[servers.files.overrides.read_file]
name = "read"
title = "Read a file"
description = "Reads one file."
annotations = { readOnlyHint = true, destructiveHint = false, idempotentHint = true, openWorldHint = false, title = "Read" }

[servers.files.overrides."fs.stat"]
annotations.readOnlyHint = true

[servers.web]
url = "https://example.invalid/mcp"
tools.deny = ["*"]
`,
			want: policyPart{Policy: &policy.Rules{Servers: map[string]*policy.ServerRules{
				"files": {
					Key: "servers.files",
					Tools: policy.List{
						Allow: []policy.Pattern{{Glob: "read_*", Source: file + ":5"}, {Glob: "list_*", Source: file + ":5"}},
						Deny:  []policy.Pattern{{Glob: "*delete*", Source: file + ":6"}},
					},
					Prompts:                 policy.List{Allow: []policy.Pattern{{Glob: "summarize", Source: file + ":10"}}},
					Resources:               policy.List{Deny: []policy.Pattern{{Glob: "file:///secret/*", Source: file + ":7"}}},
					ReadOnly:                true,
					ReadOnlySource:          file + ":3",
					IgnoreAnnotations:       true,
					IgnoreAnnotationsSource: file + ":4",
					Overrides: map[string]policy.Override{
						"read_file": {
							Name: "read", Title: "Read a file", Description: "Reads one file.",
							Annotations: &policy.Annotations{Title: "Read", ReadOnly: ptr(true), Destructive: ptr(false), Idempotent: ptr(true), OpenWorld: ptr(false)},
							Source:      file + ":12",
						},
						"fs.stat": {Annotations: &policy.Annotations{ReadOnly: ptr(true)}, Source: file + ":18"},
					},
				},
				"web": {Key: "servers.web", Tools: policy.List{Deny: []policy.Pattern{{Glob: "*", Source: file + ":23"}}}},
			}}},
		},
		{
			name: "a disabled server's policy is left out, its names free",
			doc: `[servers.off]
command = "x"
disabled = true
read_only = true
tools.deny = ["${UNSET}"]
overrides.t.name = "same"

[servers.on]
command = "y"
overrides.t.name = "same"
`,
			want: policyPart{Policy: &policy.Rules{Servers: map[string]*policy.ServerRules{
				"on": {Key: "servers.on", Overrides: map[string]policy.Override{"t": {Name: "same", Source: file + ":10"}}},
			}}},
		},
		{
			name: "audit to stderr with -",
			doc:  "[audit]\nfile = \"-\"\n",
			want: policyPart{Audit: Audit{Enabled: true}},
		},
		{
			name: "audit to stderr when enabled without a file",
			doc:  "[audit]\nenabled = true\n",
			want: policyPart{Audit: Audit{Enabled: true}},
		},
		{
			name: "audit disabled with a file",
			doc:  "[audit]\nfile = \"/var/log/m.jsonl\"\nenabled = false\narguments = true\n",
			want: policyPart{Audit: Audit{File: "/var/log/m.jsonl", Arguments: true}},
		},
		{
			name: "audit table without file or enabled is off",
			doc:  "[audit]\narguments = true\n",
			want: policyPart{Audit: Audit{Arguments: true}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ParseEnv(file, []byte(tt.doc), env(tt.env))
			if err != nil {
				t.Fatalf("ParseEnv: %v", err)
			}
			got := policyPart{Policy: cfg.Policy, PolicyFiles: cfg.PolicyFiles, Audit: cfg.Audit}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseEnv policy (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParsePolicyErrors(t *testing.T) {
	long := strings.Repeat("x", 65)
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{
			name: "misspelled top-level read_only",
			doc:  "readonly = true\n",
			want: []string{`proxy.toml:1:1: readonly: unknown key; did you mean "read_only"?`},
		},
		{
			name: "read_only as a string",
			doc:  "[servers.a]\ncommand = \"a\"\nread_only = \"true\"\n",
			want: []string{`proxy.toml:3:1: servers.a.read_only: expected true or false, found string; remove the quotes`},
		},
		{
			name: "policy_files as a string",
			doc:  "policy_files = \"policy/*.toml\"\n",
			want: []string{`proxy.toml:1:1: policy_files: expected an array of strings such as ["a", "b"], found string`},
		},
		{
			name: "bad policy_files glob",
			doc:  "policy_files = [\"policy/[\", \"\"]\n",
			want: []string{
				`proxy.toml:1:1: policy_files: "policy/[" is not a file path or glob; write it like "policy/*.toml"`,
				`proxy.toml:1:1: policy_files: "" is not a file path or glob; write it like "policy/*.toml"`,
			},
		},
		{
			name: "bad glob in a deny list",
			doc:  "[servers.a]\ncommand = \"a\"\ntools.deny = [\"ok_*\", \"write_[ab\"]\n",
			want: []string{`proxy.toml:3:7: servers.a.tools.deny: "write_[ab" is not a valid glob: "[" at byte 7 is not closed; close the class with "]" or write "\[" for a literal "["`},
		},
		{
			name: "empty glob in an allow list",
			doc:  "[servers.a]\ncommand = \"a\"\n[servers.a.resources]\nallow = [\"\"]\n",
			want: []string{`proxy.toml:4:1: servers.a.resources.allow: the empty glob matches nothing; remove it, or write "*" to match everything`},
		},
		{
			name: "tools as an array",
			doc:  "[servers.a]\ncommand = \"a\"\ntools = [\"read\"]\n",
			want: []string{`proxy.toml:3:1: servers.a.tools: expected a table such as { allow = ["read_*"], deny = ["*delete*"] }, found array`},
		},
		{
			name: "unknown key in a list table",
			doc:  "[servers.a]\ncommand = \"a\"\nprompts.alow = [\"x\"]\n",
			want: []string{`proxy.toml:3:9: servers.a.prompts.alow: unknown key; did you mean "allow"?`},
		},
		{
			name: "bad annotations mode",
			doc:  "[servers.a]\ncommand = \"a\"\nannotations = \"distrust\"\n",
			want: []string{`proxy.toml:3:1: servers.a.annotations: "distrust" is not an annotations mode; use "trust" (the default) or "ignore" to trust only the overrides`},
		},
		{
			name: "override name with a dot",
			doc:  "[servers.a]\ncommand = \"a\"\n[servers.a.overrides.read]\nname = \"fs.read\"\n",
			want: []string{`proxy.toml:4:1: servers.a.overrides.read.name: "fs.read" is not a valid tool name; use 1 to 64 letters, digits, '_' or '-'`},
		},
		{
			name: "override name too long",
			doc:  "[servers.a]\ncommand = \"a\"\n[servers.a.overrides.read]\nname = \"" + long + "\"\n",
			want: []string{`proxy.toml:4:1: servers.a.overrides.read.name: "` + long + `" is not a valid tool name; use 1 to 64 letters, digits, '_' or '-'`},
		},
		{
			name: "empty override name",
			doc:  "[servers.a]\ncommand = \"a\"\n[servers.a.overrides.read]\nname = \"\"\n",
			want: []string{`proxy.toml:4:1: servers.a.overrides.read.name: "" is not a valid tool name; use 1 to 64 letters, digits, '_' or '-'`},
		},
		{
			name: "two overrides give the same name",
			doc: `[servers.a]
command = "a"
[servers.a.overrides.read]
name = "read"
[servers.b]
command = "b"
[servers.b.overrides."x.read"]
name = "read"
`,
			want: []string{`proxy.toml:8:1: servers.b.overrides."x.read".name: "read" is already the name given by servers.a.overrides.read (proxy.toml:4); choose another name`},
		},
		{
			name: "unknown key in an override",
			doc:  "[servers.a]\ncommand = \"a\"\n[servers.a.overrides.read]\ndescripton = \"x\"\n",
			want: []string{`proxy.toml:4:1: servers.a.overrides.read.descripton: unknown key; did you mean "description"?`},
		},
		{
			name: "annotation key in another case",
			doc:  "[servers.a]\ncommand = \"a\"\n[servers.a.overrides.read]\nannotations = { readonlyHint = true }\n",
			want: []string{`proxy.toml:4:17: servers.a.overrides.read.annotations.readonlyHint: unknown key; did you mean "readOnlyHint"?`},
		},
		{
			name: "annotation key in snake case",
			doc:  "[servers.a]\ncommand = \"a\"\n[servers.a.overrides.read.annotations]\nread_only = true\n",
			want: []string{`proxy.toml:4:1: servers.a.overrides.read.annotations.read_only: unknown key; valid keys here are title, readOnlyHint, destructiveHint, idempotentHint, openWorldHint`},
		},
		{
			name: "annotation hint as a string",
			doc:  "[servers.a]\ncommand = \"a\"\n[servers.a.overrides.read]\nannotations.readOnlyHint = \"yes\"\n",
			want: []string{`proxy.toml:4:13: servers.a.overrides.read.annotations.readOnlyHint: expected true or false, found string; remove the quotes`},
		},
		{
			name: "override that is not a table",
			doc:  "[servers.a]\ncommand = \"a\"\n[servers.a.overrides]\nread = \"read_file\"\n",
			want: []string{`proxy.toml:4:1: servers.a.overrides.read: expected a table with name, title, description, annotations, budget or args, found string`},
		},
		{
			name: "unknown audit key",
			doc:  "[audit]\npath = \"a.jsonl\"\n",
			want: []string{`proxy.toml:2:1: audit.path: unknown key; valid keys here are file, enabled, arguments`},
		},
		{
			name: "empty audit file",
			doc:  "[audit]\nfile = \"\"\n",
			want: []string{`proxy.toml:2:1: audit.file: file is empty; write a path like "audit.jsonl", or "-" for stderr`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ParseEnv("proxy.toml", []byte(tt.doc), env(nil))
			if cfg != nil {
				t.Errorf("ParseEnv returned a config with an error")
			}
			if diff := cmp.Diff(tt.want, problems(t, err)); diff != "" {
				t.Errorf("ParseEnv problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParsePolicyFile(t *testing.T) {
	doc := `# base policy
rules.secrets = { uri = "files+file:///secret/*", deny = true }

[rules.search]
match = "*__search*"
rate = "30/minute"
max_result_bytes = 200000
call_timeout = "20s"

[rules.no_writes]
match = "files__write_*"
deny = true
reason = "writes need review"

[rules.log]
match = "files__write_log"
allow = true
`
	want := []policy.Rule{
		{Name: "secrets", Match: "files+file:///secret/*", URI: true, Deny: true, Source: "policy/base.toml:2"},
		{Name: "search", Match: "*__search*", Rate: policy.Rate{N: 30, Per: time.Minute}, MaxResultBytes: 200000, CallTimeout: 20 * time.Second, Source: "policy/base.toml:4"},
		{Name: "no_writes", Match: "files__write_*", Deny: true, Reason: "writes need review", Source: "policy/base.toml:10"},
		{Name: "log", Match: "files__write_log", Allow: true, Source: "policy/base.toml:15"},
	}
	got, err := ParsePolicyFile("policy/base.toml", []byte(doc))
	if err != nil {
		t.Fatalf("ParsePolicyFile: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParsePolicyFile (-want +got):\n%s", diff)
	}

	empty, err := ParsePolicyFile("policy/empty.toml", []byte("# nothing yet\n"))
	if err != nil || empty != nil {
		t.Errorf("ParsePolicyFile(empty) = %v, %v; want nil, nil", empty, err)
	}
}

func TestParsePolicyFileErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{
			name: "syntax error",
			doc:  "[rules.a]\nmatch = files\n",
			want: []string{`p.toml:2:9: invalid TOML: expected value but found "files" instead`},
		},
		{
			name: "a variable in match or uri",
			doc:  "[rules.a]\nmatch = \"${PREFIX}__write_*\"\ndeny = true\n[rules.b]\nuri = \"files+file:///${HOME}/*\"\ndeny = true\n",
			want: []string{
				`p.toml:2:1: rules.a.match: "${PREFIX}__write_*" holds ${PREFIX}, but policy files do not expand environment variables: the rule would match it literally, so nothing; write the name out`,
				`p.toml:5:1: rules.b.uri: "files+file:///${HOME}/*" holds ${HOME}, but policy files do not expand environment variables: the rule would match it literally, so nothing; write the name out`,
			},
		},
		{
			name: "array of tables named rule",
			doc:  "[[rule]]\nmatch = \"x\"\ndeny = true\n",
			want: []string{`p.toml:1:3: rule: unknown key; did you mean "rules"?`},
		},
		{
			name: "array of tables named rules",
			doc:  "[[rules]]\nmatch = \"x\"\ndeny = true\n",
			want: []string{`p.toml:1:3: rules: expected a table of rules such as [rules.NAME], found array of tables`},
		},
		{
			name: "rule that is not a table",
			doc:  "[rules]\nno_writes = \"files__write_*\"\n",
			want: []string{`p.toml:2:1: rules.no_writes: expected a table with match = "GLOB" or uri = "GLOB", found string`},
		},
		{
			name: "unknown key with did-you-mean",
			doc:  "[rules.a]\nmach = \"x\"\ndeny = true\n",
			want: []string{`p.toml:2:1: rules.a.mach: unknown key; did you mean "match"?`},
		},
		{
			name: "neither match nor uri",
			doc:  "[rules.a]\ndeny = true\n",
			want: []string{`p.toml:1:8: rules.a: neither match nor uri is set; set match = "GLOB" for tool and prompt names, or uri = "GLOB" for resource URIs`},
		},
		{
			name: "both match and uri",
			doc:  "[rules.a]\nmatch = \"x\"\nuri = \"y\"\ndeny = true\n",
			want: []string{`p.toml:1:8: rules.a: both match and uri are set; a rule matches tool and prompt names (match) or resource URIs (uri): split it in two`},
		},
		{
			name: "bad glob",
			doc:  "[rules.a]\nuri = \"file:///[z-a]\"\ndeny = true\n",
			want: []string{`p.toml:2:1: rules.a.uri: "file:///[z-a]" is not a valid glob: range 'z'-'a' in the class at byte 9 is reversed; write the lower character first`},
		},
		{
			name: "empty glob",
			doc:  "[rules.a]\nmatch = \"\"\ndeny = true\n",
			want: []string{`p.toml:2:1: rules.a.match: the empty glob matches nothing; remove it, or write "*" to match everything`},
		},
		{
			name: "allow and deny",
			doc:  "[rules.a]\nmatch = \"x\"\nallow = true\ndeny = true\n",
			want: []string{`p.toml:1:8: rules.a: both allow and deny are true; keep one`},
		},
		{
			name: "rule that does nothing",
			doc:  "[rules.a]\nmatch = \"x\"\ndeny = false\nreason = \"r\"\n",
			want: []string{`p.toml:1:8: rules.a: the rule does nothing; set deny = true, allow = true, confirm = true, read_only = true, or a limit: call_timeout, max_result_bytes, rate, budget or args`},
		},
		{
			name: "bad rate",
			doc:  "[rules.a]\nmatch = \"x\"\nrate = \"30 per minute\"\n",
			want: []string{`p.toml:3:1: rules.a.rate: rate "30 per minute" is not N/period; write it like "30/minute", "5/second" or "100/1h"`},
		},
		{
			name: "rate as a number",
			doc:  "[rules.a]\nmatch = \"x\"\nrate = 30\n",
			want: []string{`p.toml:3:1: rules.a.rate: expected a string, found integer; put the value in quotes`},
		},
		{
			name: "zero max_result_bytes",
			doc:  "[rules.a]\nmatch = \"x\"\nmax_result_bytes = 0\n",
			want: []string{`p.toml:3:1: rules.a.max_result_bytes: 0 is out of range; use a positive number of bytes, like 200000`},
		},
		{
			name: "call_timeout without a unit",
			doc:  "[rules.a]\nmatch = \"x\"\ncall_timeout = 20\n",
			want: []string{`p.toml:3:1: rules.a.call_timeout: expected a duration string, found integer; write it with a unit, like "20s"`},
		},
		{
			name: "an unterminated variable is refused too",
			doc:  "[rules.a]\nmatch = \"${X\"\ndeny = true\n",
			want: []string{`p.toml:2:1: rules.a.match: "${X" holds "${", but policy files do not expand environment variables: the rule would match it literally, so nothing; write the name out`},
		},
		{
			name: "every problem, in file order",
			doc:  "[rules.b]\nmatch = \"[\"\ndeny = true\n\n[rules.a]\nmatch = \"x\"\nrate = \"1/fortnight\"\nreasn = \"r\"\n",
			want: []string{
				`p.toml:2:1: rules.b.match: "[" is not a valid glob: "[" at byte 1 is not closed; close the class with "]" or write "\[" for a literal "["`,
				`p.toml:7:1: rules.a.rate: rate "1/fortnight": "fortnight" is not a period; use second, minute, hour or a positive duration like "10s"`,
				`p.toml:8:1: rules.a.reasn: unknown key; did you mean "reason"?`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules, err := ParsePolicyFile("p.toml", []byte(tt.doc))
			if err != nil && rules != nil {
				t.Errorf("ParsePolicyFile returned rules with an error")
			}
			if diff := cmp.Diff(tt.want, problems(t, err)); diff != "" {
				t.Errorf("ParsePolicyFile problems (-want +got):\n%s", diff)
			}
		})
	}
}

// writeFiles creates the files under dir, making folders as needed.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoadPolicyFiles(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"proxy.toml": `policy_files = ["policy/*.toml", "policy/a.toml", "` + filepath.ToSlash(filepath.Join(outside, "extra.toml")) + `", "none/*.toml"]
[servers.files]
command = "files"
tools.deny = ["rm"]
`,
		"policy/b.toml":  "[rules.b]\nmatch = \"b*\"\ndeny = true\n",
		"policy/a.toml":  "\n[rules.a2]\nmatch = \"a2\"\ndeny = true\n[rules.a1]\nmatch = \"a1\"\ndeny = true\n",
		"policy/c.txt":   "not toml at all",
		"policy/README":  "ignored",
		"unlisted.toml":  "[rules.u]\nmatch = \"u\"\ndeny = true\n",
		"policy/sub/x.t": "",
	})
	writeFiles(t, outside, map[string]string{"extra.toml": "[rules.e]\nuri = \"*\"\nrate = \"1/s\"\n"})

	cfg, err := Load(filepath.Join(dir, "proxy.toml"))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	server := map[string]*policy.ServerRules{"files": {Key: "servers.files", Tools: policy.List{Deny: []policy.Pattern{{Glob: "rm", Source: filepath.Join(dir, "proxy.toml") + ":4"}}}}}
	want := &policy.Rules{Servers: server, FileRules: []policy.Rule{
		{Name: "a2", Match: "a2", Deny: true, Source: filepath.Join("policy", "a.toml") + ":2"},
		{Name: "a1", Match: "a1", Deny: true, Source: filepath.Join("policy", "a.toml") + ":5"},
		{Name: "b", Match: "b*", Deny: true, Source: filepath.Join("policy", "b.toml") + ":1"},
		{Name: "e", Match: "*", URI: true, Rate: policy.Rate{N: 1, Per: time.Second}, Source: filepath.Join(outside, "extra.toml") + ":1"},
	}}
	if diff := cmp.Diff(want, cfg.Policy); diff != "" {
		t.Errorf("Load policy (-want +got):\n%s", diff)
	}

	// A reload sees the files as they are now and keeps proxy.toml's part.
	writeFiles(t, dir, map[string]string{"policy/b.toml": "[rules.b]\nmatch = \"b*\"\nallow = true\n"})
	if err := os.Remove(filepath.Join(dir, "policy", "a.toml")); err != nil {
		t.Fatal(err)
	}
	_, err = LoadPolicyFiles(cfg)
	wantErr := []string{filepath.Join("policy", "a.toml") + ": policy file not found; create it or remove it from policy_files in " + filepath.Join(dir, "proxy.toml")}
	if diff := cmp.Diff(wantErr, problems(t, err)); diff != "" {
		t.Errorf("LoadPolicyFiles without a listed file (-want +got):\n%s", diff)
	}
	cfg.PolicyFiles = cfg.PolicyFiles[:1]
	got, err := LoadPolicyFiles(cfg)
	if err != nil {
		t.Fatalf("LoadPolicyFiles: %v", err)
	}
	want = &policy.Rules{Servers: server, FileRules: []policy.Rule{
		{Name: "b", Match: "b*", Allow: true, Source: filepath.Join("policy", "b.toml") + ":1"},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LoadPolicyFiles after a change (-want +got):\n%s", diff)
	}
	if len(cfg.Policy.FileRules) != 4 {
		t.Errorf("LoadPolicyFiles modified cfg.Policy: %d file rules, want 4", len(cfg.Policy.FileRules))
	}
}

func TestLoadPolicyFilesErrors(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"proxy.toml":    "policy_files = [\"p/*.toml\"]\n",
		"p/bad.toml":    "[rules.a]\nmatch = \"x\"\n",
		"p/broken.toml": "[rules.b]\nmatch = x\n",
		"p/good.toml":   "[rules.g]\nmatch = \"g\"\ndeny = true\n",
	})
	_, err := Load(filepath.Join(dir, "proxy.toml"))
	want := []string{
		filepath.Join("p", "bad.toml") + `:1:8: rules.a: the rule does nothing; set deny = true, allow = true, confirm = true, read_only = true, or a limit: call_timeout, max_result_bytes, rate, budget or args`,
		filepath.Join("p", "broken.toml") + `:2:9: invalid TOML: expected value but found "x" instead`,
	}
	if diff := cmp.Diff(want, flatten(t, err)); diff != "" {
		t.Errorf("Load problems (-want +got):\n%s", diff)
	}
}

// flatten is problems for errors joined twice (files joined, each file's
// problems joined).
func flatten(t *testing.T, err error) []string {
	t.Helper()
	var out []string
	for _, msg := range problems(t, err) {
		out = append(out, strings.Split(msg, "\n")...)
	}
	return out
}

func TestLoadWithoutPolicyFiles(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"proxy.toml": "read_only = true\n"})
	cfg, err := Load(filepath.Join(dir, "proxy.toml"))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := &policy.Rules{ReadOnly: true, ReadOnlySource: filepath.Join(dir, "proxy.toml") + ":1"}
	if diff := cmp.Diff(want, cfg.Policy); diff != "" {
		t.Errorf("Load policy (-want +got):\n%s", diff)
	}
	if got, err := LoadPolicyFiles(cfg); err != nil || got != cfg.Policy {
		t.Errorf("LoadPolicyFiles without policy files = %p, %v; want cfg.Policy %p", got, err, cfg.Policy)
	}
}

func FuzzParsePolicyFile(f *testing.F) {
	seeds := []string{
		"",
		"[rules.a]\nmatch = \"files__write_*\"\ndeny = true\nreason = \"r\"\n",
		"[rules.b]\nuri = \"files+file:///secret/*\"\nrate = \"30/minute\"\nmax_result_bytes = 10\ncall_timeout = \"2s\"\n",
		"rules = { a = { match = \"[\", allow = true, deny = true }, b = 1 }\n",
		"[[rules]]\nmatch = 1\n",
		"[rules.\"x.y\"]\nmach = \"x\"\n",
		"[rules.w]\nmatch = \"*\"\nallow = true\nwho = [\"group:eng\", \"user:a:b\", \"key:ci\", \"role:r\"]\n",
		"[rules.w]\nmatch = \"*\"\nread_only = true\nrate = \"1/s\"\nper = \"all\"\nwho = [\"x:y\", 1, \"group:\\u0000\"]\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rules, err := ParsePolicyFile("p.toml", data)
		if err != nil {
			if rules != nil {
				t.Error("ParsePolicyFile returned rules with an error")
			}
			for _, msg := range problems(t, err) {
				if !strings.HasPrefix(msg, "p.toml:") || strings.Contains(msg, "\n") {
					t.Errorf("problem %q does not start with the file name or spans lines", msg)
				}
			}
			return
		}
		for _, r := range rules {
			if policy.CheckGlob(r.Match) != nil || r.Match == "" {
				t.Errorf("rule %q has an invalid glob %q", r.Name, r.Match)
			}
			if r.Allow && r.Deny {
				t.Errorf("rule %q both allows and denies", r.Name)
			}
			if !strings.HasPrefix(r.Source, "p.toml") {
				t.Errorf("rule %q has source %q", r.Name, r.Source)
			}
			if r.ReadOnly && (r.Allow || r.URI) {
				t.Errorf("rule %q is read_only with allow or on URIs", r.Name)
			}
			if r.Who != nil && len(r.Who) == 0 {
				t.Errorf("rule %q has a who list that names no one", r.Name)
			}
			for _, p := range r.Who {
				if back, err := policy.ParsePrincipal(p.Kind + ":" + p.Name); err != nil || back != p {
					t.Errorf("rule %q: who entry %+v does not parse back: %v", r.Name, p, err)
				}
			}
		}
	})
}

// TestResourceGlobsCanonical: resource globs in proxy.toml and uri rules in
// policy files are compiled to canonical form at load, and a glob that
// could never match a canonical URI is an error naming it.
func TestResourceGlobsCanonical(t *testing.T) {
	doc := `[servers.fs]
command = "x"
resources.deny = ["FILE://localhost/srv/./x/../%73ecret/*", "file:/srv//y/"]
resources.allow = ["Demo://Host/*"]
`
	cfg, err := ParseEnv("proxy.toml", []byte(doc), env(nil))
	if err != nil {
		t.Fatalf("ParseEnv: %v", err)
	}
	want := policy.List{
		Allow: []policy.Pattern{{Glob: "demo://host/*", Source: "proxy.toml:4"}},
		Deny:  []policy.Pattern{{Glob: "file:///srv/secret/*", Source: "proxy.toml:3"}, {Glob: "file:///srv/y", Source: "proxy.toml:3"}},
	}
	if diff := cmp.Diff(want, cfg.Policy.Servers["fs"].Resources); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	rules, err := ParsePolicyFile("p.toml", []byte("[rules.ev]\nuri = \"EV+demo://resource/./dynamic/text/%31\"\ndeny = true\n"))
	if err != nil {
		t.Fatalf("ParsePolicyFile: %v", err)
	}
	if got, want := rules[0].Match, "ev+demo://resource/dynamic/text/1"; got != want {
		t.Errorf("uri rule compiled to %q, want %q", got, want)
	}

	for _, tt := range []struct{ name, doc, want string }{
		{"encoded slash in proxy.toml", "[servers.fs]\ncommand = \"x\"\nresources.deny = [\"file:///srv/secret%2f*\"]\n",
			`proxy.toml:3:11: servers.fs.resources.deny: resource URI cannot be canonicalised: glob "file:///srv/secret%2f*" can never match a canonical URI`},
		{"remote file host in proxy.toml", "[servers.fs]\ncommand = \"x\"\nresources.allow = [\"file://example.com/*\"]\n",
			`servers.fs.resources.allow: resource URI cannot be canonicalised: glob "file://example.com/*" can never match a canonical URI: it is a file URI with the host "example.com"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseEnv("proxy.toml", []byte(tt.doc), env(nil))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseEnv error %v, want it to contain %q", err, tt.want)
			}
		})
	}
	_, err = ParsePolicyFile("p.toml", []byte("[rules.nul]\nuri = \"file:///srv/%00*\"\ndeny = true\n"))
	if want := `p.toml:2:1: rules.nul.uri: resource URI cannot be canonicalised: glob "file:///srv/%00*" can never match a canonical URI`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("ParsePolicyFile error %v, want it to contain %q", err, want)
	}
}
