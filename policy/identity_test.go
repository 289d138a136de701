package policy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParsePrincipal(t *testing.T) {
	tests := []struct {
		in      string
		want    Principal
		wantErr string
	}{
		{in: "user:alice@example.com", want: Principal{Kind: PrincipalUser, Name: "alice@example.com"}},
		{in: "key:ci-bot", want: Principal{Kind: PrincipalKey, Name: "ci-bot"}},
		{in: "group:eng", want: Principal{Kind: PrincipalGroup, Name: "eng"}},
		{in: "role:admin", want: Principal{Kind: PrincipalGroup, Name: "admin"}},
		{in: "user:urn:corp:alice", want: Principal{Kind: PrincipalUser, Name: "urn:corp:alice"}},
		{in: "alice", wantErr: "has no prefix"},
		{in: "team:eng", wantErr: `unknown prefix "team:"`},
		{in: "User:alice", wantErr: `unknown prefix "User:"`},
		{in: "group:", wantErr: "names no one"},
		{in: "group:eng-*", wantErr: "glob character"},
		{in: "user:?", wantErr: "glob character"},
		{in: "group:eng\x00", wantErr: "control character"},
		{in: "group:eng\n", wantErr: "control character"},
		{in: "group:\xff", wantErr: "invalid UTF-8"},
		{in: "group: eng", wantErr: "spaces"},
		{in: "group:" + strings.Repeat("a", 600), wantErr: "longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParsePrincipal(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParsePrincipal(%q) = %v, %v; want error containing %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func who(t *testing.T, ss ...string) []Principal {
	t.Helper()
	var out []Principal
	for _, s := range ss {
		p, err := ParsePrincipal(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

var (
	alice = Identity{User: "alice@example.com", Groups: []string{"eng"}}
	bob   = Identity{User: "bob@example.com", Groups: []string{"sales"}}
	ciBot = Identity{Key: "ci-bot", Groups: []string{"ci"}}
	anon  = Identity{}
	// A token whose groups claim tries to widen: globs and look-alikes are
	// plain strings that equal no configured name.
	sneaky = Identity{User: "group:eng", Groups: []string{"*", "eng\x00", "Eng", "eng "}}
)

func TestDecideWho(t *testing.T) {
	ro, rw := true, false
	tools := []Item{
		{Kind: Tool, Server: "files", Original: "read", Exposed: "files__read", Annotations: &Annotations{ReadOnly: &ro}},
		{Kind: Tool, Server: "files", Original: "write", Exposed: "files__write", Annotations: &Annotations{ReadOnly: &rw}},
		{Kind: Tool, Server: "pay", Original: "charge", Exposed: "pay__charge"},
	}
	tests := []struct {
		name  string
		rules *Rules
		// want maps an identity's name to the exposed tools it sees.
		want map[string][]string
	}{
		{
			name: "allow for a group over deny for everyone",
			rules: &Rules{FileRules: []Rule{
				{Name: "none", Match: "*", Deny: true},
				{Name: "eng", Match: "files__*", Allow: true, Who: who(t, "group:eng")},
			}},
			want: map[string][]string{"alice": {"files__read", "files__write"}, "bob": nil, "ci": nil, "anon": nil, "sneaky": nil},
		},
		{
			name: "a who-rule wins over an equally specific rule for everyone",
			rules: &Rules{FileRules: []Rule{
				{Name: "no_files", Match: "files__*", Deny: true},
				{Name: "eng", Match: "files__*", Allow: true, Who: who(t, "group:eng", "key:ci-bot")},
			}},
			want: map[string][]string{"alice": {"files__read", "files__write", "pay__charge"}, "bob": {"pay__charge"},
				"ci": {"files__read", "files__write", "pay__charge"}, "anon": {"pay__charge"}, "sneaky": {"pay__charge"}},
		},
		{
			name: "a more specific rule for everyone still beats a who-rule",
			rules: &Rules{FileRules: []Rule{
				{Name: "no_write", Match: "files__write", Deny: true},
				{Name: "eng", Match: "files__*", Allow: true, Who: who(t, "group:eng")},
			}},
			want: map[string][]string{"alice": {"files__read", "pay__charge"}, "bob": {"files__read", "pay__charge"},
				"ci": {"files__read", "pay__charge"}, "anon": {"files__read", "pay__charge"}, "sneaky": {"files__read", "pay__charge"}},
		},
		{
			name: "deny for one user",
			rules: &Rules{FileRules: []Rule{
				{Name: "bob_no_pay", Match: "pay__*", Deny: true, Who: who(t, "user:bob@example.com")},
			}},
			want: map[string][]string{"alice": {"files__read", "files__write", "pay__charge"}, "bob": {"files__read", "files__write"},
				"ci": {"files__read", "files__write", "pay__charge"}, "anon": {"files__read", "files__write", "pay__charge"},
				"sneaky": {"files__read", "files__write", "pay__charge"}},
		},
		{
			name: "read_only for a group",
			rules: &Rules{FileRules: []Rule{
				{Name: "sales_reads", Match: "*", ReadOnly: true, Who: who(t, "group:sales")},
			}},
			want: map[string][]string{"alice": {"files__read", "files__write", "pay__charge"}, "bob": {"files__read"},
				"ci": {"files__read", "files__write", "pay__charge"}, "anon": {"files__read", "files__write", "pay__charge"},
				"sneaky": {"files__read", "files__write", "pay__charge"}},
		},
		{
			name: "a policy file's who-rule cannot widen what proxy.toml's rules deny",
			rules: &Rules{
				TableRules: []Rule{{Name: "no_pay", Match: "pay__*", Deny: true}},
				FileRules:  []Rule{{Name: "eng_pay", Match: "pay__charge", Allow: true, Who: who(t, "group:eng")}},
			},
			want: map[string][]string{"alice": {"files__read", "files__write"}, "bob": {"files__read", "files__write"},
				"ci": {"files__read", "files__write"}, "anon": {"files__read", "files__write"}, "sneaky": {"files__read", "files__write"}},
		},
		{
			name: "proxy.toml's who-rule, narrowed further by a policy file",
			rules: &Rules{
				TableRules: []Rule{{Name: "none", Match: "*", Deny: true}, {Name: "eng", Match: "*", Allow: true, Who: who(t, "group:eng")}},
				FileRules:  []Rule{{Name: "no_write", Match: "files__write", Deny: true}},
			},
			want: map[string][]string{"alice": {"files__read", "pay__charge"}, "bob": nil, "ci": nil, "anon": nil, "sneaky": nil},
		},
	}
	ids := map[string]Identity{"alice": alice, "bob": bob, "ci": ciBot, "anon": anon, "sneaky": sneaky}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string][]string{}
			for name, id := range ids {
				got[name] = nil
				for _, it := range tools {
					it.Who = id
					if tt.rules.Decide(it).Visible {
						got[name] = append(got[name], it.Exposed)
					}
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("visible tools per identity (-want +got):\n%s", diff)
			}
			// The bounds: visible for Narrowest means for everyone,
			// hidden for Widest means for no one.
			for _, it := range tools {
				for name, id := range ids {
					it.Who = id
					v := tt.rules.Decide(it).Visible
					it.Who = Narrowest
					if tt.rules.Decide(it).Visible && !v {
						t.Errorf("%s: visible for Narrowest but hidden for %s", it.Exposed, name)
					}
					it.Who = Widest
					if !tt.rules.Decide(it).Visible && v {
						t.Errorf("%s: hidden for Widest but visible for %s", it.Exposed, name)
					}
				}
			}
		})
	}
}

func TestDecideWhoLimits(t *testing.T) {
	rules := &Rules{FileRules: []Rule{
		{Name: "slow", Match: "*", Rate: Rate{N: 10, Per: 60e9}, Source: "p.toml:1"},
		{Name: "eng_fast", Match: "*", Rate: Rate{N: 2, Per: 60e9}, Shared: true, Who: who(t, "group:eng"), Source: "p.toml:5"},
		{Name: "eng_pay", Match: "pay__*", Confirm: true, Reason: "money", Who: who(t, "group:eng"), Source: "p.toml:9"},
	}}
	it := Item{Kind: Tool, Server: "pay", Original: "charge", Exposed: "pay__charge"}
	it.Who = alice
	da := rules.Decide(it)
	it.Who = bob
	db := rules.Decide(it)
	got := fmt.Sprintf("%s | %s", da, db)
	want := `exposed; rate 2/minute shared by all callers (p.toml:5); needs a person's approval per call (rule "eng_pay" (who group:eng) at p.toml:9): money | exposed; rate 10/minute (p.toml:1)`
	if got != want {
		t.Errorf("decisions:\n got %s\nwant %s", got, want)
	}
	if !rules.HasWho() || (&Rules{FileRules: []Rule{{Name: "x", Match: "*", Deny: true}}}).HasWho() {
		t.Error("HasWho is wrong")
	}
}

func FuzzParsePrincipal(f *testing.F) {
	for _, s := range []string{"user:alice@example.com", "key:ci-bot", "group:eng", "role:a:b", "group:", "x", "user:\x00", "group:eng*"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePrincipal(s)
		if err != nil {
			return
		}
		if p.Name == "" || strings.ContainsAny(p.Name, "*?[") || strings.ContainsFunc(p.Name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Errorf("ParsePrincipal(%q) = %+v: a name that should have been refused", s, p)
		}
		if back, err := ParsePrincipal(p.Kind + ":" + p.Name); err != nil || back != p {
			t.Errorf("ParsePrincipal(%q) = %+v does not parse back: %+v, %v", s, p, back, err)
		}
		// The identity it names is in a list of it, and the anonymous one is not.
		id := Identity{}
		switch p.Kind {
		case PrincipalUser:
			id.User = p.Name
		case PrincipalKey:
			id.Key = p.Name
		case PrincipalGroup:
			id.Groups = []string{p.Name}
		}
		if !id.In([]Principal{p}) || (Identity{}).In([]Principal{p}) {
			t.Errorf("membership of %+v is wrong", p)
		}
	})
}
