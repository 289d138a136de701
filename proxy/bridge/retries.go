//lint:file-ignore SA1019 roots are deprecated as of protocol 2026-07-28, but a forwarded retry carries the capabilities the client declared, roots among them.

package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/proxy/era"
	"github.com/manifold-mcp/manifold/proxy/relay"
)

// RetryRelay carries the retry of a 2026-07-28 client's call that the bridge
// parked on a legacy server (call.go) to the replica that holds the call,
// when the retry reaches another, and brings back what that replica answers
// (README "Several replicas"). The upstream call lives in one replica's
// memory, with the server's questions waiting in it; the retry is served
// there as if it had arrived there. Implementations must be safe for
// concurrent use and authenticate what they carry. If Options.Retries is
// nil, such a retry is refused with -32602 (call again to start over).
type RetryRelay interface {
	// Replica names this replica: lowercase letters and digits, at most 64,
	// different for every process.
	Replica() string
	// ForwardRetry hands retry to replica and returns what its serve
	// returned, calling progress, one at a time, with what serve's notify
	// sent meanwhile (best effort: some may be lost). It returns ctx's
	// error when ctx ends first (and tells the replica to stop serving it),
	// ErrNoReplica when no replica of that name listens or it stopped
	// answering (Options.ErrNoReplica), and an error wrapping
	// ErrSharedUnavailable when the relay cannot be reached
	// (Options.ErrUnreachable).
	ForwardRetry(ctx context.Context, replica string, retry []byte, progress func([]byte)) ([]byte, error)
	// ServeRetries calls serve, each time on a goroutine of its own, with
	// each retry forwarded to this replica that it could authenticate, until
	// ctx ends; serve's ctx ends when the replica that forwarded it gives
	// up, and notify sends it a progress notification. It reconnects by
	// itself while the relay is down.
	ServeRetries(ctx context.Context, serve func(ctx context.Context, retry []byte, notify func([]byte)) []byte)
}

// forwardedRetry is a retry as one replica forwards it to another: what the
// replica that holds the call needs to open its state and resume it.
type forwardedRetry struct {
	Name      string                     `json:"name"`      // the exposed tool
	Server    string                     `json:"server"`    // the upstream it routes to
	Principal string                     `json:"principal"` // who asks (principal), as the forwarding replica authenticated it
	Caps      *era.ClientCapsV2          `json:"caps"`      // the client's capabilities, as the request declared them
	Client    string                     `json:"client"`    // the client as it names itself
	Fields    map[string]json.RawMessage `json:"fields"`    // the params: requestState, inputResponses, arguments
}

// retryAnswer is what the replica that holds the call answers: the result,
// or the JSON-RPC error.
type retryAnswer struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *jsonrpc.Error  `json:"error,omitempty"`
}

// codeServerError is JSON-RPC's implementation-defined server error.
const codeServerError = -32000

// elsewhere reports whether a parked state st, whose call is not here,
// names another replica that retries can be forwarded to.
func (br *Bridges) elsewhere(st era.State) bool {
	return br.opts.Retries != nil && st.Replica != "" && st.Replica != br.opts.Retries.Replica()
}

// forwardRetry serves the retry of a call parked on replica there, and
// hands its answer to finish. The call's progress meanwhile goes to ss, the
// retry's session, with the retry's own progress token (none without one).
func (br *Bridges) forwardRetry(ctx context.Context, ss *mcp.ServerSession, replica string, e era.Request, name, server, principal string, fields map[string]json.RawMessage, finish func(json.RawMessage, error)) {
	caps := &era.ClientCapsV2{ClientCapabilities: *e.Caps, Roots: e.Caps.RootsV2}
	msg, err := json.Marshal(forwardedRetry{Name: name, Server: server, Principal: principal, Caps: caps, Client: e.Client, Fields: fields})
	if err != nil {
		finish(nil, err)
		return
	}
	token := progressTokenOf(fields["_meta"])
	progress := func(raw []byte) {
		var p mcp.ProgressNotificationParams
		if ss == nil || token == nil || json.Unmarshal(raw, &p) != nil {
			return
		}
		p.ProgressToken = token // the retry's own, whatever the other replica says
		_ = ss.NotifyProgress(ctx, &p)
	}
	out, err := br.opts.Retries.ForwardRetry(ctx, replica, msg, progress)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		finish(nil, ctx.Err())
		return
	case br.opts.ErrNoReplica != nil && errors.Is(err, br.opts.ErrNoReplica):
		finish(nil, StateError(name, errors.New("the replica that holds the call it names stopped, and the call ended with it")))
		return
	case br.opts.ErrUnreachable != nil && errors.Is(err, br.opts.ErrUnreachable):
		finish(nil, &jsonrpc.Error{Code: codeServerError, Message: fmt.Sprintf(
			"the call of %q waits on another replica, and the shared store ([cluster] redis) that carries its retry there cannot be reached (%v); send the same retry again shortly", name, err)})
		return
	default:
		finish(nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf(
			"the call of %q waits on another replica, and its retry could not be carried there: %v", name, err)})
		return
	}
	var a retryAnswer
	if err := json.Unmarshal(out, &a); err != nil || (a.Error == nil) == (a.Result == nil) {
		finish(nil, fmt.Errorf("the replica that holds the call of %q answered its retry with something else than a result or an error", name))
		return
	}
	if a.Error != nil {
		finish(nil, a.Error)
		return
	}
	finish(a.Result, nil)
}

// ServeRetry serves a retry another replica forwarded (forwardedRetry): its
// state is opened again here, bound to the same request, and must name a
// call parked here; the answer is the call's next event, as for a retry
// that arrives here. Nil when ctx ended first (the other replica gave up).
func (br *Bridges) ServeRetry(ctx context.Context, msg []byte, notify func([]byte)) []byte {
	answer := func(raw json.RawMessage, err error) []byte {
		var a retryAnswer
		if err != nil {
			var we *jsonrpc.Error
			if !errors.As(err, &we) {
				we = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
			}
			a.Error = we
		} else {
			a.Result = raw
		}
		out, _ := json.Marshal(a)
		return out
	}
	var fr forwardedRetry
	if err := json.Unmarshal(msg, &fr); err != nil || fr.Fields == nil || fr.Caps == nil {
		return answer(nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "a forwarded retry that could not be read"})
	}
	st, err := br.OpenRetry(fr.Name, fr.Server, fr.Principal, fr.Fields)
	if err != nil {
		return answer(nil, err)
	}
	if st.Kind != era.Parked || br.opts.Retries == nil || st.Replica != br.opts.Retries.Replica() {
		return answer(nil, StateError(fr.Name, era.ErrMalformed))
	}
	done := make(chan []byte, 1)
	finish := func(raw json.RawMessage, err error) { done <- answer(raw, err) }
	// The call's progress goes back to the replica that forwarded the
	// retry, which sends it with the retry's own token.
	rebind := func(route string) {
		br.opts.Relay.RebindRemote(route, func(p *mcp.ProgressNotificationParams) {
			if raw, err := json.Marshal(p); err == nil {
				notify(raw)
			}
		})
	}
	br.ResumeParked(ctx, br.Get(st.Call), st, era.CapsV1(fr.Caps), fr.Principal, fr.Name, fr.Fields, finish, rebind)
	select {
	case out := <-done:
		return out
	case <-ctx.Done():
		// The call was cancelled with the retry (as when a client closes a
		// retry that waits here); its answer has nowhere to go.
		return nil
	}
}

// progressTokenOf returns the progress token of a raw _meta, nil without
// one.
func progressTokenOf(meta json.RawMessage) any {
	var m struct {
		Token json.RawMessage `json:"progressToken"`
	}
	if len(meta) == 0 || json.Unmarshal(meta, &m) != nil || len(m.Token) == 0 {
		return nil
	}
	tok, err := relay.DecodeProgressToken(m.Token)
	if err != nil {
		return nil
	}
	return tok
}
