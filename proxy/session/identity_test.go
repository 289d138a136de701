package session

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/manifold-mcp/manifold/policy"
)

func TestIdentityPolicy(t *testing.T) {
	tests := []struct {
		name string
		ti   *auth.TokenInfo
		want policy.Identity
	}{
		{"anonymous", nil, policy.Identity{}},
		{"token", &auth.TokenInfo{UserID: "jwt:https://idp alice", Extra: map[string]any{
			ExtraSubject: "alice", ExtraGroups: []string{"eng", "ops"}, ExtraMethod: "jwt"}},
			policy.Identity{User: "alice", Groups: []string{"eng", "ops"}}},
		{"API key", &auth.TokenInfo{UserID: "key:ci-bot", Extra: map[string]any{
			ExtraSubject: "ci-bot", ExtraGroups: []string{"ci"}, ExtraMethod: MethodAPIKey}},
			policy.Identity{Key: "ci-bot", Groups: []string{"ci"}}},
		{"groups with control characters are dropped", &auth.TokenInfo{UserID: "jwt:i m", Extra: map[string]any{
			ExtraSubject: "m", ExtraGroups: []string{"eng\x00", "", "a\nb", "ok"}, ExtraMethod: "jwt"}},
			policy.Identity{User: "m", Groups: []string{"ok"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, IdentityOf(tt.ti).Policy(), cmp.AllowUnexported(policy.Identity{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	// Keys tell identities apart: a key from a token, one group set from
	// another, and nothing in a claim can make two sets look alike.
	keys := map[string]string{}
	for _, ti := range []*auth.TokenInfo{
		{UserID: "jwt:i a", Extra: map[string]any{ExtraGroups: []string{"x", "y"}}},
		{UserID: "jwt:i a", Extra: map[string]any{ExtraGroups: []string{"x\x00y"}}},
		{UserID: "jwt:i a", Extra: map[string]any{ExtraGroups: []string{"xy"}}},
		{UserID: "key:a", Extra: map[string]any{ExtraGroups: []string{"x", "y"}}},
	} {
		k := IdentityOf(ti).Key()
		if prev, dup := keys[k]; dup {
			t.Errorf("identities %s and %v share the key %q", prev, ti.Extra, k)
		}
		keys[k] = ti.UserID
	}
	if k := IdentityOf(nil).Key(); k != "" {
		t.Errorf("anonymous key %q, want \"\" (one shared bucket)", k)
	}
}
