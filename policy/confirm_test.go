package policy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecideConfirm(t *testing.T) {
	rules := &Rules{
		Servers: map[string]*ServerRules{
			"bank": {Confirm: Confirmation{Confirm: true, Reason: "moves money", Source: "proxy.toml:5"},
				Overrides: map[string]Override{"pay": {Confirm: Confirmation{Confirm: true, Reason: "pays", Source: "proxy.toml:9"}}}},
			"files": {Overrides: map[string]Override{"write_file": {Confirm: Confirmation{Confirm: true, Source: "proxy.toml:14"}}}},
		},
		FileRules: []Rule{
			{Name: "deletes", Match: "*__delete*", Confirm: true, Reason: "deletes", Source: "policy/a.toml:1"},
			{Name: "uri", Match: "files+file:///*", URI: true, Confirm: true, Source: "policy/a.toml:5"},
			{Name: "gone", Match: "files__gone", Deny: true, Confirm: true, Source: "policy/a.toml:9"},
		},
	}
	type got struct {
		Visible, Confirm                     bool
		ConfirmRule, ConfirmSource, ConfirmR string
	}
	tests := []struct {
		name string
		it   Item
		want got
	}{
		{"server-wide", Item{Kind: Tool, Server: "bank", Original: "balance", Exposed: "bank__balance"},
			got{true, true, "servers.bank.confirm", "proxy.toml:5", "moves money"}},
		{"an override is more specific", Item{Kind: Tool, Server: "bank", Original: "pay", Exposed: "bank__pay"},
			got{true, true, "servers.bank.overrides.pay.confirm", "proxy.toml:9", "pays"}},
		{"one tool", Item{Kind: Tool, Server: "files", Original: "write_file", Exposed: "files__write_file"},
			got{true, true, "servers.files.overrides.write_file.confirm", "proxy.toml:14", ""}},
		{"a policy file rule on the exposed name", Item{Kind: Tool, Server: "files", Original: "delete_file", Exposed: "files__delete_file"},
			got{true, true, `rule "deletes"`, "policy/a.toml:1", "deletes"}},
		{"a policy file rule on the unshortened name", Item{Kind: Tool, Server: "files", Original: "delete_file", Exposed: "files__de_1a2b", Full: "files__delete_file"},
			got{true, true, `rule "deletes"`, "policy/a.toml:1", "deletes"}},
		{"a policy file rule on the name before a rename", Item{Kind: Tool, Server: "files", Original: "delete_file", Exposed: "rm", Qualified: "files__delete_file"},
			got{true, true, `rule "deletes"`, "policy/a.toml:1", "deletes"}},
		{"no rule", Item{Kind: Tool, Server: "files", Original: "read_file", Exposed: "files__read_file"},
			got{Visible: true}},
		{"not for prompts", Item{Kind: Prompt, Server: "bank", Original: "p", Exposed: "bank__p"},
			got{Visible: true}},
		{"deny wins", Item{Kind: Tool, Server: "files", Original: "gone", Exposed: "files__gone"},
			got{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := rules.Decide(tt.it)
			g := got{d.Visible, d.Confirm, d.ConfirmRule, d.ConfirmSource, d.ConfirmReason}
			if diff := cmp.Diff(tt.want, g); diff != "" {
				t.Errorf("Decide(%+v) confirm (-want +got):\n%s", tt.it, diff)
			}
		})
	}
}

func TestDecisionStringConfirm(t *testing.T) {
	d := Decision{Visible: true, Confirm: true, ConfirmRule: `rule "pay"`, ConfirmSource: "policy/base.toml:3", ConfirmReason: "moves money"}
	want := `exposed; needs a person's approval per call (rule "pay" at policy/base.toml:3): moves money`
	if got := d.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
