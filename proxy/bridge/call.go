//lint:file-ignore SA1019 sampling and roots are deprecated as of protocol 2026-07-28, but the proxy bridges them between clients and servers of both eras (ARCHITECTURE §3 "Protocol versions").

package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/errgroup"

	"github.com/manifold-mcp/manifold/internal/jsonscan"
	"github.com/manifold-mcp/manifold/proxy/era"
	"github.com/manifold-mcp/manifold/proxy/relay"
)

// This file bridges the protocol eras for tools/call (README "Bridges: what
// is translated, and the limits"):
//
//   - a modern client calling a legacy server (cell 3): the server's
//     sampling, elicitation and roots requests during the call park the call
//     (parkedCall); the client gets an input_required result with a sealed
//     requestState that names the parked call, and its retry hands the
//     answers to the waiting server and waits for the next event;
//   - a modern client calling a modern server (cell 2): an input_required
//     result passes through with the server's requestState wrapped (sealed,
//     the server's name inside), so that the retry reaches the same server
//     and no other;
//   - a legacy client calling a modern server (cell 4): the server's input
//     requests become real requests on the client's session, and the answers
//     re-invoke the server, in a loop bounded by Options.MaxInputRounds.
//
// The era of a request is its own (the _meta protocol version, era.Request),
// so routing, policy and audit stay era-neutral: the call pipeline calls
// into here at the points where the eras differ, the retry and the result.

const defaultMaxInputRounds = 10 // as the SDK's own client

// Retry serves the retry of a modern client's call (a tools/call with
// requestState) of the exposed name routed to server, asked by the
// principal Options.Principal names. It returns false when the state is not the proxy's parked state (a
// wrapped upstream state, which it unwraps into fields for the caller to
// forward). A call parked on another replica is served there (retries.go).
func (br *Bridges) Retry(ctx context.Context, ss *mcp.ServerSession, e era.Request, name, server string, fields map[string]json.RawMessage, finish func(json.RawMessage, error)) (handled bool) {
	principal := br.opts.Principal(ctx, ss, e.Client)
	st, err := br.OpenRetry(name, server, principal, fields)
	if err != nil {
		finish(nil, err)
		return true
	}
	switch st.Kind {
	case era.Wrapped:
		fields["requestState"], _ = json.Marshal(st.Inner)
		return false
	case era.Parked:
	default:
		finish(nil, StateError(name, era.ErrMalformed))
		return true
	}
	pc := br.Get(st.Call)
	if pc == nil && br.elsewhere(st) {
		br.forwardRetry(ctx, ss, st.Replica, e, name, server, principal, fields, finish)
		return true
	}
	// Progress from here on goes to this retry, once its state is found
	// good and before its answers reach the server (which may report
	// progress at once).
	rebind := func(route string) { br.opts.Relay.Rebind(route, ctx, ss, fields["_meta"]) }
	br.ResumeParked(ctx, pc, st, e.Caps, principal, name, fields, finish, rebind)
	return true
}

// Wrap seals a modern upstream's requestState in an input_required
// result for a modern client (cell 2), so that the retry comes back to the
// same upstream, for the same tool and principal, within ttl, and applies
// the relay rules to its input requests (relayRules).
func (br *Bridges) Wrap(raw json.RawMessage, bind era.Binding, ttl time.Duration) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return raw, nil
	}
	inner, ok := m["requestState"]
	if !ok {
		return raw, nil
	}
	var state string
	if err := json.Unmarshal(inner, &state); err != nil {
		return nil, fmt.Errorf("upstream %q: requestState is not a string", bind.Upstream)
	}
	sealer, err := br.Sealer()
	if err != nil {
		return nil, err
	}
	sealed, err := sealer.Seal(era.State{Kind: era.Wrapped, Binding: bind, Expires: time.Now().Add(ttl), Inner: state})
	if err != nil {
		return nil, err
	}
	m["requestState"], _ = json.Marshal(sealed)
	if reqs, ok := m["inputRequests"]; ok {
		if m["inputRequests"], err = relayRules(reqs, bind.Upstream); err != nil {
			return nil, fmt.Errorf("upstream %q: inputRequests: %w", bind.Upstream, err)
		}
	}
	return json.Marshal(m)
}

// relayRules applies to a modern server's raw inputRequests the rules of
// the relays: an elicitation's message names the server, and a sampling
// request's includeContext is reduced to none.
func relayRules(raw json.RawMessage, server string) (json.RawMessage, error) {
	var reqs map[string]struct {
		Method string                     `json:"method"`
		Params map[string]json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(raw, &reqs); err != nil {
		return nil, err
	}
	for _, r := range reqs {
		switch {
		case r.Params == nil:
		case r.Method == "elicitation/create":
			var msg string
			_ = json.Unmarshal(r.Params["message"], &msg)
			r.Params["message"], _ = json.Marshal(fmt.Sprintf("[%s] %s", server, msg))
		case r.Method == "sampling/createMessage":
			var ic string
			if json.Unmarshal(r.Params["includeContext"], &ic) == nil && ic != "" {
				r.Params["includeContext"], _ = json.Marshal(relay.NoContext(ic))
			}
		}
	}
	return json.Marshal(reqs)
}

// MaxInputRounds is the bound of the rounds of input a legacy client gives a
// modern server in one call (Options.MaxInputRounds).
func (br *Bridges) MaxInputRounds() int {
	if br.opts.MaxInputRounds > 0 {
		return br.opts.MaxInputRounds
	}
	return defaultMaxInputRounds
}

// Next is what InputRound decided: the params of the next call (Raw),
// an error for the call (Err), or, with neither, that the bound was hit.
type Next struct {
	Raw json.RawMessage
	Err error
}

// InputRound serves one input_required result of a modern server b to a
// legacy client (cell 4), whose capabilities are caps: each input request
// becomes a real request on the client's session ss, by the relay rules,
// and the answers make the params of the next call. final is true when raw
// is not an input_required result after all. *rounds counts the rounds;
// past Options.MaxInputRounds, next is empty.
func (br *Bridges) InputRound(ctx context.Context, ss *mcp.ServerSession, b relay.Backend, caps *mcp.ClientCapabilities, raw json.RawMessage, fields map[string]json.RawMessage, rounds *int) (next Next, final bool) {
	var res struct {
		ResultType    string              `json:"resultType"`
		InputRequests mcp.InputRequestMap `json:"inputRequests"`
		RequestState  *string             `json:"requestState"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || res.ResultType != "input_required" {
		if err != nil && jsonscan.Contains(raw, []byte(`"resultType":"input_required"`)) {
			return Next{Err: fmt.Errorf("upstream %q: its input_required result could not be decoded: %v", b.Name(), err)}, false
		}
		return Next{}, true
	}
	if *rounds >= br.MaxInputRounds() {
		return Next{}, false
	}
	*rounds++
	if len(res.InputRequests) == 0 {
		return Next{Err: fmt.Errorf("upstream %q is busy (it asked for no input and no result); retry later", b.Name())}, false
	}
	answers := make(map[string]json.RawMessage, len(res.InputRequests))
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	for key, ir := range res.InputRequests {
		g.Go(func() error {
			ans, err := br.askLegacy(gctx, ss, b, caps, ir)
			if err != nil {
				return err
			}
			enc, err := json.Marshal(ans)
			if err != nil {
				return err
			}
			mu.Lock()
			answers[key] = enc
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		if ctx.Err() != nil {
			return Next{Err: ctx.Err()}, false
		}
		return Next{Err: err}, false
	}
	retry := maps.Clone(fields)
	var err error
	if retry["inputResponses"], err = json.Marshal(answers); err != nil {
		return Next{Err: err}, false
	}
	if res.RequestState != nil {
		retry["requestState"], _ = json.Marshal(*res.RequestState)
	} else {
		delete(retry, "requestState")
	}
	params, err := json.Marshal(retry)
	if err != nil {
		return Next{Err: err}, false
	}
	return Next{Raw: params}, false
}

// askLegacy sends one input request of server b to the legacy client of ss,
// as the relays send an upstream's requests: the message names the server,
// includeContext is reduced, roots go only to a server of one client, and a
// capability the client did not declare is a -32021 error naming it.
func (br *Bridges) askLegacy(ctx context.Context, ss *mcp.ServerSession, b relay.Backend, caps *mcp.ClientCapabilities, ir mcp.InputRequest) (mcp.Result, error) {
	switch p := ir.(type) {
	case *mcp.ElicitParams:
		if err := NeedCap("elicitation/create", b.Name(), relay.ElicitMode(p), caps); err != nil {
			return nil, err
		}
		q := *p
		q.Message = fmt.Sprintf("[%s] %s", b.Name(), q.Message)
		if q.ElicitationID != "" {
			br.opts.Relay.RememberElicitation(q.ElicitationID, b, ss)
		}
		return ss.Elicit(ctx, &q)
	case *mcp.CreateMessageWithToolsParams:
		if err := NeedCap("sampling/createMessage", b.Name(), "", caps); err != nil {
			return nil, err
		}
		q := *p
		q.IncludeContext = relay.NoContext(q.IncludeContext)
		if len(q.Tools) == 0 {
			msgs := make([]*mcp.SamplingMessage, 0, len(q.Messages))
			for _, m := range q.Messages {
				if len(m.Content) != 1 {
					return ss.CreateMessageWithTools(ctx, &q)
				}
				msgs = append(msgs, &mcp.SamplingMessage{Role: m.Role, Content: m.Content[0]})
			}
			return ss.CreateMessage(ctx, &mcp.CreateMessageParams{Meta: q.Meta, IncludeContext: q.IncludeContext, MaxTokens: q.MaxTokens, Messages: msgs,
				Metadata: q.Metadata, ModelPreferences: q.ModelPreferences, StopSequences: q.StopSequences, SystemPrompt: q.SystemPrompt, Temperature: q.Temperature})
		}
		return ss.CreateMessageWithTools(ctx, &q)
	case *mcp.ListRootsParams:
		if err := NeedCap("roots/list", b.Name(), "", caps); err != nil {
			return nil, err
		}
		if !b.PerSession() {
			return nil, relay.Refusal(b, "roots/list")
		}
		return ss.ListRoots(ctx, p)
	}
	return nil, fmt.Errorf("upstream %q asked for input of an unknown kind (%T)", b.Name(), ir)
}
