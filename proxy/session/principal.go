package session

import (
	"context"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Principal names who a sealed state (and an approval) belongs to: the
// downstream session; without one, the stdio client (there is one: stdio),
// or over HTTP the authenticated user (the token's UserID, which tells an
// API key from a token and one issuer's subject from another's) with the
// client as it names itself, or the client alone without authentication.
func Principal(ctx context.Context, ss *mcp.ServerSession, stdio bool, client string) string {
	switch {
	case ss != nil && ss.ID() != "":
		return "session:" + ss.ID()
	case stdio:
		return "stdio"
	}
	if id := IdentityFrom(ctx); id.User != "" {
		return "user:" + strconv.Quote(id.User) + " " + client
	}
	return "anonymous:" + client
}
