package config

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/manifold-mcp/manifold/policy"
)

func TestParseConfirm(t *testing.T) {
	const file = "/etc/manifold/proxy.toml"
	doc := `confirm_ttl = "90s"

[servers.bank]
command = "bank"
confirm = true
confirm_reason = "moves money"

[servers.files]
command = "files"

[servers.files.overrides.write_file]
confirm = true
reason = "writes to the disk"
`
	cfg, err := ParseEnv(file, []byte(doc), env(nil))
	if err != nil {
		t.Fatalf("ParseEnv: %v", err)
	}
	want := map[string]*policy.ServerRules{
		"bank": {Key: "servers.bank", Confirm: policy.Confirmation{Confirm: true, Reason: "moves money", Source: file + ":5"}},
		"files": {Key: "servers.files", Overrides: map[string]policy.Override{
			"write_file": {Source: file + ":11", Confirm: policy.Confirmation{Confirm: true, Reason: "writes to the disk", Source: file + ":12"}},
		}},
	}
	if diff := cmp.Diff(want, cfg.Policy.Servers); diff != "" {
		t.Errorf("servers' rules (-want +got):\n%s", diff)
	}
	if cfg.ConfirmTTL != 90*time.Second {
		t.Errorf("ConfirmTTL = %s, want 1m30s", cfg.ConfirmTTL)
	}

	def, err := ParseEnv(file, []byte("[servers.a]\ncommand = \"a\"\n"), env(nil))
	if err != nil {
		t.Fatalf("ParseEnv: %v", err)
	}
	if def.ConfirmTTL != 0 {
		t.Errorf("ConfirmTTL without confirm_ttl = %s, want 0 (the default)", def.ConfirmTTL)
	}
}

func TestParseConfirmErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{
			name: "a reason without confirm",
			doc:  "[servers.a]\ncommand = \"a\"\nconfirm_reason = \"x\"\n[servers.a.overrides.t]\nconfirm = false\nreason = \"y\"\n",
			want: []string{
				`proxy.toml:3:1: servers.a.confirm_reason: confirm_reason is set but confirm is not true; add confirm = true, or remove confirm_reason`,
				`proxy.toml:6:1: servers.a.overrides.t.reason: reason is set but confirm is not true; add confirm = true, or remove reason`,
			},
		},
		{
			name: "confirm as a string",
			doc:  "[servers.a]\ncommand = \"a\"\nconfirm = \"yes\"\n",
			want: []string{`proxy.toml:3:1: servers.a.confirm: expected true or false, found string; remove the quotes`},
		},
		{
			name: "confirm_ttl out of range",
			doc:  "confirm_ttl = \"10ms\"\n",
			want: []string{`proxy.toml:1:1: confirm_ttl: 10ms is out of range; use 1s to 24h, like "5m" (the default)`},
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

func TestParsePolicyFileConfirm(t *testing.T) {
	doc := "[rules.pay]\nmatch = \"*__pay*\"\nconfirm = true\nreason = \"moves money\"\n"
	got, err := ParsePolicyFile("policy/base.toml", []byte(doc))
	if err != nil {
		t.Fatalf("ParsePolicyFile: %v", err)
	}
	want := []policy.Rule{{Name: "pay", Match: "*__pay*", Confirm: true, Reason: "moves money", Source: "policy/base.toml:1"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParsePolicyFile (-want +got):\n%s", diff)
	}
	_, err = ParsePolicyFile("p.toml", []byte("[rules.r]\nuri = \"files+file:///x/*\"\nconfirm = true\n"))
	wantErr := []string{`p.toml:3:1: rules.r.confirm: confirm applies to tool calls, but this rule matches resource URIs (uri); use match = "GLOB" on exposed tool names`}
	if diff := cmp.Diff(wantErr, problems(t, err)); diff != "" {
		t.Errorf("ParsePolicyFile(uri confirm) problems (-want +got):\n%s", diff)
	}
}
