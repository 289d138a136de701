package session

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// TestPrincipal: a state belongs to the stdio client, or over HTTP without
// a session to the authenticated user with the client, else to the client.
func TestPrincipal(t *testing.T) {
	ctx := context.Background()
	user := WithTokenInfo(ctx, &auth.TokenInfo{UserID: "jwt:i alice"})
	tests := []struct {
		name  string
		ctx   context.Context
		stdio bool
		want  string
	}{
		{"stdio", ctx, true, "stdio"},
		{"anonymous", ctx, false, "anonymous:cli/1"},
		{"user", user, false, `user:"jwt:i alice" cli/1`},
	}
	for _, tt := range tests {
		if got := Principal(tt.ctx, nil, tt.stdio, "cli/1"); got != tt.want {
			t.Errorf("%s: Principal = %q, want %q", tt.name, got, tt.want)
		}
	}
}
