package proxy

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/proxy/bridge"
	"github.com/manifold-mcp/manifold/proxy/confirm"
)

// This file is the root's side of approval bound to the call
// (proxy/confirm): the names approve-call uses, and the part of a modern
// client's parked call (proxy/bridge) in an approval, given to the approver as
// its Parked hooks.

// ValidApprovalID reports whether id has the shape of an approval id.
func ValidApprovalID(id string) bool { return confirm.ValidApprovalID(id) }

// ApprovalFile returns the path of the file that shows the call of
// approval id, in dir.
func ApprovalFile(dir, id string) string { return confirm.ApprovalFile(dir, id) }

// ApprovedFile returns the path of the file that approves approval id.
func ApprovedFile(dir, id string) string { return confirm.ApprovedFile(dir, id) }

// ApprovalView is what approve-call reads from an approval's file.
type ApprovalView = confirm.View

// confirmParked is how the approver reaches the parked call a call's
// context belongs to: it asks the person through it, binds it to the digest
// of the call to approve, and learns why it was aborted.
func confirmParked() confirm.Parked {
	return confirm.Parked{
		Ask: func(ctx context.Context, mode string, p *mcp.ElicitParams) (*mcp.ElicitResult, bool, error) {
			return bridge.Ask[*mcp.ElicitResult](ctx, "elicitation/create", mode, p)
		},
		Bind: func(ctx context.Context, digest string) {
			if pc := bridge.Of(ctx); pc != nil {
				pc.SetConfirm(digest)
			}
		},
		Aborted: func(ctx context.Context) string { return bridge.Of(ctx).AbortReason() },
	}
}
