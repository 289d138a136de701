package config

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/manifold-mcp/manifold/policy"
)

func TestParsePolicyFileGuards(t *testing.T) {
	doc := `[rules.paid]
match = "web__search"
budget = { limit = 100, window = "1h", from = "/structuredContent/credits", missing = 0.5 }
args.max_items = { "/paths" = 10, "/a~1b" = 0 }
args.max_length = { "/query" = 200 }
args.max = { "/count" = 2.5 }

[rules.meta]
match = "web__*"
budget = { limit = 3, window = "10m", from = "/_meta/cost" }
`
	want := []policy.Rule{
		{
			Name: "paid", Match: "web__search", Source: "p.toml:1",
			Budget: policy.Budget{Limit: 100, Window: time.Hour, From: "/structuredContent/credits", Missing: 0.5, Source: "p.toml:3"},
			Args: []policy.ArgLimit{
				{Kind: policy.MaxItems, At: "/paths", N: 10, Source: "p.toml:4"},
				{Kind: policy.MaxItems, At: "/a~1b", N: 0, Source: "p.toml:4"},
				{Kind: policy.MaxLength, At: "/query", N: 200, Source: "p.toml:5"},
				{Kind: policy.Max, At: "/count", N: 2.5, Source: "p.toml:6"},
			},
		},
		{
			Name: "meta", Match: "web__*", Source: "p.toml:8",
			Budget: policy.Budget{Limit: 3, Window: 10 * time.Minute, From: "/_meta/cost", Source: "p.toml:10"},
		},
	}
	got, err := ParsePolicyFile("p.toml", []byte(doc))
	if err != nil {
		t.Fatalf("ParsePolicyFile: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParsePolicyFile (-want +got):\n%s", diff)
	}
}

func TestParsePolicyFileGuardErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{
			name: "budget without its keys",
			doc:  "[rules.a]\nmatch = \"x\"\nbudget = {}\n",
			want: []string{
				`p.toml:3:1: rules.a.budget: limit is not set; write the most that calls may spend per window, like limit = 100`,
				`p.toml:3:1: rules.a.budget: window is not set; write the length of the window over which spends add up, like window = "1h"`,
				`p.toml:3:1: rules.a.budget: from is not set; write the JSON pointer to the number each result reports, like from = "/structuredContent/credits"`,
			},
		},
		{
			name: "bad budget values",
			doc:  "[rules.a]\nmatch = \"x\"\nbudget = { limit = -1, window = \"0s\", from = \"/content/0\", missing = -2 }\n",
			want: []string{
				`p.toml:3:12: rules.a.budget.limit: -1 is not a positive amount; write the most that calls may spend per window, like limit = 100`,
				`p.toml:3:24: rules.a.budget.window: "0s" is not greater than zero; write a positive duration like "30s"`,
				`p.toml:3:39: rules.a.budget.from: "/content/0" does not point at a member of structuredContent or _meta of the result; write it like "/structuredContent/credits" or "/_meta/credits_charged"`,
				`p.toml:3:60: rules.a.budget.missing: -2 is not an amount of 0 or more; write what a result without the number counts, like missing = 1`,
			},
		},
		{
			name: "budget from that is not a pointer",
			doc:  "[rules.a]\nmatch = \"x\"\nbudget = { limit = 1, window = \"1h\", from = \"structuredContent.credits\" }\n",
			want: []string{`p.toml:3:38: rules.a.budget.from: "structuredContent.credits" is not a JSON pointer: it must start with "/", like "/structuredContent/credits"`},
		},
		{
			name: "bad argument limits",
			doc:  "[rules.a]\nmatch = \"x\"\nargs.max_items = { \"paths\" = 1, \"/b\" = 1.5, \"/c\" = \"3\" }\nargs.min = { \"/x\" = 1 }\n",
			want: []string{
				`p.toml:3:21: rules.a.args.max_items.paths: "paths" is not a JSON pointer to an argument; write it like "/paths" (an argument) or "/options/limit" (a member of one), with "~1" for a "/" in a name and "~0" for a "~"`,
				`p.toml:3:33: rules.a.args.max_items."/b": 1.5 is not a whole number of 0 or more; write the most items allowed, like "/b" = 10`,
				`p.toml:3:45: rules.a.args.max_items."/c": expected a number, found string; remove the quotes`,
				`p.toml:4:6: rules.a.args.min: unknown key; did you mean "max"?`,
			},
		},
		{
			name: "budget on a uri rule",
			doc:  "[rules.a]\nuri = \"x://*\"\nbudget = { limit = 1, window = \"1h\", from = \"/_meta/c\" }\n",
			want: []string{`p.toml:3:1: rules.a.budget: budget applies to tool calls, but this rule matches resource URIs (uri); put it in a rule with match = "GLOB"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParsePolicyFile("p.toml", []byte(tt.doc))
			if diff := cmp.Diff(tt.want, problems(t, err)); diff != "" {
				t.Errorf("ParsePolicyFile problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseLabelResults(t *testing.T) {
	const file = "/etc/manifold/proxy.toml"
	doc := `label_results = true

[servers.web]
command = "w"

[servers.mail]
command = "m"
label_results = false
`
	cfg, err := ParseEnv(file, []byte(doc), env(nil))
	if err != nil {
		t.Fatalf("ParseEnv: %v", err)
	}
	off := false
	want := &policy.Rules{LabelResults: true, LabelResultsSource: file + ":1", Servers: map[string]*policy.ServerRules{
		"mail": {Key: "servers.mail", LabelResults: &off, LabelResultsSource: file + ":8"},
	}}
	if diff := cmp.Diff(want, cfg.Policy); diff != "" {
		t.Errorf("Policy (-want +got):\n%s", diff)
	}
}

// TestParseOverrideGuards: a tool's override in proxy.toml takes budget and
// args like a policy file rule; a disabled server's are not validated.
func TestParseOverrideGuards(t *testing.T) {
	const file = "/etc/manifold/proxy.toml"
	doc := `[servers.web]
command = "w"

[servers.web.overrides.search]
budget = { limit = 5, window = "24h", from = "/_meta/cost" }
args.max_length = { "/query" = 100 }

[servers.off]
command = "o"
disabled = true
overrides.x = { budget = { limit = -1 } }
`
	cfg, err := ParseEnv(file, []byte(doc), env(nil))
	if err != nil {
		t.Fatalf("ParseEnv: %v", err)
	}
	want := map[string]policy.Override{"search": {
		Budget: policy.Budget{Limit: 5, Window: 24 * time.Hour, From: "/_meta/cost", Source: file + ":5"},
		Args:   []policy.ArgLimit{{Kind: policy.MaxLength, At: "/query", N: 100, Source: file + ":6"}},
		Source: file + ":4",
	}}
	if diff := cmp.Diff(want, cfg.Policy.Servers["web"].Overrides); diff != "" {
		t.Errorf("overrides (-want +got):\n%s", diff)
	}
	_, err = ParseEnv(file, []byte("[servers.web]\ncommand = \"w\"\noverrides.s = { args = { max = { \"/n\" = \"ten\" } } }\n"), env(nil))
	if diff := cmp.Diff([]string{`/etc/manifold/proxy.toml:3:34: servers.web.overrides.s.args.max."/n": expected a number, found string; remove the quotes`}, problems(t, err)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}
