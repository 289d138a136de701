package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/manifold-mcp/manifold/policy"
)

func TestParseWho(t *testing.T) {
	doc := `
[rules.eng]
match = "files__*"
allow = true
who = ["group:eng", "user:alice@example.com", "role:admin", "key:ci-bot"]

[rules.sales_reads]
match = "*"
read_only = true
who = ["group:sales"]

[rules.shared]
match = "*__search"
rate = "10/minute"
per = "all"
`
	got, err := ParsePolicyFile("p.toml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := []policy.Rule{
		{Name: "eng", Match: "files__*", Allow: true, Source: "p.toml:2", Who: []policy.Principal{
			{Kind: "group", Name: "eng"}, {Kind: "user", Name: "alice@example.com"}, {Kind: "group", Name: "admin"}, {Kind: "key", Name: "ci-bot"}}},
		{Name: "sales_reads", Match: "*", ReadOnly: true, Source: "p.toml:7", Who: []policy.Principal{{Kind: "group", Name: "sales"}}},
		{Name: "shared", Match: "*__search", Rate: policy.Rate{N: 10, Per: 60e9}, Shared: true, Source: "p.toml:12"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}

	// The same rules in proxy.toml's own [rules] tables.
	cfg, err := Parse("proxy.toml", []byte("[servers.files]\ncommand = \"x\"\n"+doc))
	if err != nil {
		t.Fatal(err)
	}
	for i, src := range []string{"proxy.toml:4", "proxy.toml:9", "proxy.toml:14"} { // two lines down
		want[i].Source = src
	}
	if cfg.Policy == nil {
		t.Fatal("no policy from proxy.toml's [rules]")
	}
	if diff := cmp.Diff(want, cfg.Policy.TableRules); diff != "" {
		t.Errorf("proxy.toml rules (-want +got):\n%s", diff)
	}
}

func TestParseWhoErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{
			name: "unknown prefix",
			doc:  "[rules.a]\nmatch = \"x\"\ndeny = true\nwho = [\"team:eng\"]\n",
			want: []string{`p.toml:4:1: rules.a.who: element 1: "team:eng": unknown prefix "team:"; write "user:SUBJECT", "group:NAME", "role:NAME", or "key:" followed by the API key's name`},
		},
		{
			name: "no prefix",
			doc:  "[rules.a]\nmatch = \"x\"\ndeny = true\nwho = [\"alice\"]\n",
			want: []string{`p.toml:4:1: rules.a.who: element 1: "alice" has no prefix; write "user:SUBJECT", "group:NAME", "role:NAME", or "key:" followed by the API key's name`},
		},
		{
			name: "empty list",
			doc:  "[rules.a]\nmatch = \"x\"\ndeny = true\nwho = []\n",
			want: []string{`p.toml:4:1: rules.a.who: who = [] names no one, so the rule would apply to no one; remove who to apply it to everyone, or list identities such as ["group:eng", "user:alice@example.com"]`},
		},
		{
			name: "not a list",
			doc:  "[rules.a]\nmatch = \"x\"\ndeny = true\nwho = \"group:eng\"\n",
			want: []string{`p.toml:4:1: rules.a.who: expected an array of identities such as ["group:eng", "user:alice@example.com"], found string`},
		},
		{
			name: "not a string",
			doc:  "[rules.a]\nmatch = \"x\"\ndeny = true\nwho = [\"group:eng\", 7]\n",
			want: []string{`p.toml:4:1: rules.a.who: element 2: expected a string such as "group:eng", found integer; put every identity in quotes`},
		},
		{
			name: "glob",
			doc:  "[rules.a]\nmatch = \"x\"\ndeny = true\nwho = [\"user:*@example.com\"]\n",
			want: []string{`p.toml:4:1: rules.a.who: element 1: "user:*@example.com" holds a glob character (*, ? or [): who entries are exact names, not patterns; list each user, key or group`},
		},
		{
			name: "NUL",
			doc:  "[rules.a]\nmatch = \"x\"\ndeny = true\nwho = [\"group:eng\\u0000\"]\n",
			want: []string{`p.toml:4:1: rules.a.who: element 1: "group:eng\x00" holds a control character or invalid UTF-8; write the name as the identity provider sends it`},
		},
		{
			name: "bad per",
			doc:  "[rules.a]\nmatch = \"x\"\nrate = \"1/s\"\nper = \"user\"\n",
			want: []string{`p.toml:4:1: rules.a.per: "user" is not a count; write per = "identity" (each caller has its own rate and budget, the default) or per = "all" (one count shared by every caller)`},
		},
		{
			name: "per without rate or budget",
			doc:  "[rules.a]\nmatch = \"x\"\ndeny = true\nper = \"all\"\n",
			want: []string{`p.toml:4:1: rules.a.per: per says how rate and budget count, but this rule has neither; remove per or add a rate or budget`},
		},
		{
			name: "read_only with allow",
			doc:  "[rules.a]\nmatch = \"x\"\nallow = true\nread_only = true\n",
			want: []string{`p.toml:4:1: rules.a.read_only: read_only = true hides what allow = true would show; split the rule in two: one that allows, one with read_only`},
		},
		{
			name: "read_only on URIs",
			doc:  "[rules.a]\nuri = \"file:///x\"\nread_only = true\n",
			want: []string{`p.toml:3:1: rules.a.read_only: read_only applies to tools, but this rule matches resource URIs (uri); use match = "GLOB" on exposed tool names`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParsePolicyFile("p.toml", []byte(tt.doc))
			if diff := cmp.Diff(tt.want, problems(t, err)); diff != "" {
				t.Errorf("ParsePolicyFile problems (-want +got):\n%s", diff)
			}
			// proxy.toml's [rules] say the same, at the same key path.
			_, err = Parse("proxy.toml", []byte(tt.doc))
			var want []string
			for _, w := range tt.want {
				want = append(want, "proxy.toml"+w[len("p.toml"):])
			}
			if diff := cmp.Diff(want, problems(t, err)); diff != "" {
				t.Errorf("Parse problems (-want +got):\n%s", diff)
			}
		})
	}
}
