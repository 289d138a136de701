package bridge

import (
	"context"
	"encoding/json"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/internal/jsonscan"
	"github.com/manifold-mcp/manifold/proxy/era"
)

// This file is what the call pipeline asks of the bridge, each the whole of
// a step or a filter's work (ARCHITECTURE §1 "The house"): the pipeline
// hands over the era of the request (era.Request) and whether the server
// is modern, and the bridge decides what the eras need, so that routing
// does not branch on the era.

var (
	markRequestState  = []byte(`"requestState"`)
	markInputRequired = []byte(`"input_required"`)
)

// Retried takes the retry of a call with the input a server asked for: a
// modern client's (with requestState) is served by Retry, and handled
// reports whether it was; a legacy client's fields of those names are not
// the proxy's to pass on raw, and are dropped.
func (br *Bridges) Retried(ctx context.Context, ss *mcp.ServerSession, e era.Request, name, server string, fields map[string]json.RawMessage, finish func(json.RawMessage, error)) (handled bool) {
	if !e.Modern {
		delete(fields, "requestState")
		delete(fields, "inputResponses")
		return false
	}
	_, retry := fields["requestState"]
	return retry && br.Retry(ctx, ss, e, name, server, fields, finish)
}

// ForApproval parks the call of a modern client that a person must
// approve, so that the client is asked through the parked call as for a
// server's input (callCtx is the parked call's); a legacy client's call is
// not parked (ctx, and no Call): it is asked on its session.
func (br *Bridges) ForApproval(ctx context.Context, e era.Request, bind era.Binding, ttl time.Duration, finish func(json.RawMessage, error)) (callCtx context.Context, pc *Call, err error) {
	if !e.Modern {
		return ctx, nil, nil
	}
	return br.Park(ctx, bind, e.Caps, ttl, finish)
}

// OnLegacy bridges a modern client's call on a legacy server (upModern
// false), one with a session ss: the server's requests during the call
// become input the client is asked for, through a parked call (pc, unless
// the call was parked already, for its approval); when nothing the server
// may ask could be answered, no call is parked, and its questions get the
// error a parked call would give (relay's Parked). bridged is false for any
// other call, and then callCtx and pc are those given.
func (br *Bridges) OnLegacy(ctx, callCtx context.Context, ss *mcp.ServerSession, e era.Request, upModern bool, server string, bind era.Binding, ttl time.Duration, pc *Call, finish func(json.RawMessage, error)) (context.Context, *Call, bool, error) {
	if !e.Modern || ss == nil || upModern {
		return callCtx, pc, false, nil
	}
	switch {
	case pc != nil:
	case !MayAsk(e.Caps):
		// Nothing the server may ask could be answered: no call is
		// parked, and its questions get the error a parked call
		// would give (askParked).
		callCtx = context.WithValue(ctx, NoInputKey{}, server)
	default:
		var err error
		if callCtx, pc, err = br.Park(ctx, bind, e.Caps, ttl, finish); err != nil {
			return callCtx, nil, true, err
		}
	}
	return callCtx, pc, true, nil
}

// AsksInput reports whether raw, a server's result for a call of a client
// of era e on ss, may be a modern server's input_required result for a
// legacy client (cell 4), whose questions InputRound carries to the client.
func AsksInput(e era.Request, ss *mcp.ServerSession, raw json.RawMessage) bool {
	return !e.Modern && ss != nil && jsonscan.Contains(raw, markInputRequired)
}

// Seal seals a modern server's requestState in a result for a modern
// client (Wrap), bound to bind for ttl; any other result is left as it is.
func (br *Bridges) Seal(raw json.RawMessage, e era.Request, bind era.Binding, ttl time.Duration) (json.RawMessage, error) {
	if !e.Modern || !jsonscan.Contains(raw, markRequestState) {
		return raw, nil
	}
	return br.Wrap(raw, bind, ttl)
}

// MayWait reports whether a call of a client of era e, with fields, on a
// server that is modern or not (upModern), may wait for the bridge: a
// modern client's retry may resume a parked call, and a modern client's
// call on a legacy server is parked.
func MayWait(e era.Request, fields map[string]json.RawMessage, upModern bool) bool {
	if !e.Modern {
		return false
	}
	_, retry := fields["requestState"]
	return retry || !upModern
}
