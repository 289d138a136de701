//lint:file-ignore SA1019 sampling and roots are deprecated as of protocol 2026-07-28, but the proxy bridges them between clients and servers of both eras (ARCHITECTURE §3 "Protocol versions").

package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/errgroup"

	"github.com/manifold-mcp/manifold/internal/jsonscan"
	"github.com/manifold-mcp/manifold/proxy/bridge"
	"github.com/manifold-mcp/manifold/proxy/confirm"
	"github.com/manifold-mcp/manifold/proxy/era"
	"github.com/manifold-mcp/manifold/proxy/internal/wire"
	"github.com/manifold-mcp/manifold/proxy/relay"
	"github.com/manifold-mcp/manifold/proxy/session"
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
// The era of a request is its own (the _meta protocol version), so routing,
// policy and audit stay era-neutral: startCall calls into here at the two
// points where the eras differ, the retry and the result.

// Defaults of the bridge.
const (
	defaultMaxInputRounds = 10   // as the SDK's own client
	defaultMaxParked      = 1024 // calls parked at once, all clients together
	gatherWindow          = 5 * time.Millisecond
)

// reqEra is what the proxy knows of the era of one downstream request.
type reqEra struct {
	modern bool
	caps   *mcp.ClientCapabilities // the client's, per request (modern) or from initialize; never nil
	client string                  // "name/version" of the client, if known
}

// callEra reads the era of a tools/call from its raw _meta (modern: the
// protocol version is 2026-07-28 or later), else from the session
// (modernSession, clientCapsOf's capabilities).
func callEra(ss *mcp.ServerSession, meta json.RawMessage) reqEra {
	var e reqEra
	if len(meta) > 0 && era.MayBeModern(meta) {
		e = callEraMemo.Get(era.MemoKey(meta), metaEra)
	}
	if e.modern {
		return e
	}
	if ss != nil {
		if ip := ss.InitializeParams(); ip != nil {
			// A session set up by a modern request stays modern: the SDK
			// refuses server->client requests on it.
			e.modern = modernSession(ss)
			e.caps = ip.Capabilities
			if ip.ClientInfo != nil {
				e.client = ip.ClientInfo.Name + "/" + ip.ClientInfo.Version
			}
		}
	}
	if e.caps == nil {
		e.caps = &mcp.ClientCapabilities{}
	}
	return e
}

var callEraMemo wire.Memo[reqEra]

// metaEra is callEra's reading of a raw _meta: a modern request's era, or
// the zero reqEra.
func metaEra(meta []byte) reqEra {
	var m struct {
		Version string              `json:"io.modelcontextprotocol/protocolVersion"`
		Caps    *era.ClientCapsV2   `json:"io.modelcontextprotocol/clientCapabilities"`
		Info    *mcp.Implementation `json:"io.modelcontextprotocol/clientInfo"`
	}
	_ = json.Unmarshal(meta, &m)
	if m.Version < era.Version {
		return reqEra{}
	}
	e := reqEra{modern: true, caps: &mcp.ClientCapabilities{}}
	if m.Caps != nil {
		e.caps = capsV1(m.Caps)
	}
	if m.Info != nil {
		e.client = m.Info.Name + "/" + m.Info.Version
	}
	return e
}

// capsV1 converts the wire shape of modern client capabilities (where roots
// is an object) to the SDK's.
func capsV1(w *era.ClientCapsV2) *mcp.ClientCapabilities {
	c := w.ClientCapabilities
	c.RootsV2 = w.Roots
	return &c
}

type requestMetaKey struct{}

// withRequestMeta records on ctx a downstream request's own _meta, before the
// lean path strips the era's keys from what it forwards, for callEra.
func withRequestMeta(ctx context.Context, meta json.RawMessage) context.Context {
	return context.WithValue(ctx, requestMetaKey{}, meta)
}

// stripRequestMeta is era.StripMetaRaw of a modern request's raw _meta (the
// era's own keys removed; nil when nothing is left), read once for the same
// bytes (wire.Memo). The result is the caller's own copy.
func stripRequestMeta(meta json.RawMessage) json.RawMessage {
	out := stripMemo.Get(meta, func(b []byte) json.RawMessage {
		if s := era.StripMetaRaw(b); s != nil {
			return bytes.Clone(s) // s may be b, which the memo must not keep
		}
		return nil
	})
	if out == nil {
		return nil
	}
	return bytes.Clone(out)
}

var stripMemo wire.Memo[json.RawMessage]

// newBridges returns the proxy's bridges (proxy/bridge) for opts.
func newBridges(opts Options) *bridge.Bridges {
	bo := bridge.Options{StateKey: opts.StateKey, Methods: relayMethods, Digest: confirm.Digest}
	if opts.Retries != nil {
		bo.Replica = opts.Retries.Replica
	}
	return bridge.New(bo)
}

// resumeCall serves the retry of a modern client's call (a tools/call with
// requestState) of the exposed name routed to server. It returns false when
// the state is not the proxy's parked state (a wrapped upstream state, which
// the caller unwraps into fields and forwards). A call parked on another
// replica is served there (retryrelay.go).
func (s *Server) resumeCall(ctx context.Context, ss *mcp.ServerSession, e reqEra, name, server string, fields map[string]json.RawMessage, finish func(json.RawMessage, error)) (handled bool) {
	principal := session.Principal(ctx, ss, s.opts.WaitForClient, e.client)
	st, err := s.bridge.OpenRetry(name, server, principal, fields)
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
		finish(nil, bridge.StateError(name, era.ErrMalformed))
		return true
	}
	pc := s.bridge.Get(st.Call)
	if pc == nil && s.elsewhere(st) {
		s.forwardRetry(ctx, ss, st.Replica, e, name, server, principal, fields, finish)
		return true
	}
	// Progress from here on goes to this retry, once its state is found
	// good and before its answers reach the server (which may report
	// progress at once).
	rebind := func(route string) { s.relay.Rebind(route, ctx, ss, fields["_meta"]) }
	s.bridge.ResumeParked(ctx, pc, st, e.caps, principal, name, fields, finish, rebind)
	return true
}

// wrapState seals a modern upstream's requestState in an input_required
// result for a modern client (cell 2), so that the retry comes back to the
// same upstream, for the same tool and principal, within ttl, and applies
// the relay rules to its input requests (relayRules).
func (s *Server) wrapState(raw json.RawMessage, bind era.Binding, ttl time.Duration) (json.RawMessage, error) {
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
	sealer, err := s.bridge.Sealer()
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
				r.Params["includeContext"], _ = json.Marshal(noContext(ic))
			}
		}
	}
	return json.Marshal(reqs)
}

// upstreamCaps are the capabilities declared to a modern server for a call
// of a client with caps, by the relay rules (relayOptions): sampling without
// its context sub-capability (includeContext is reduced to none), roots only
// for a server whose process serves one client (isolation = "session").
func upstreamCaps(caps *mcp.ClientCapabilities, b *backend) *era.ClientCapsV2 {
	out := &era.ClientCapsV2{}
	if caps.Sampling != nil {
		out.Sampling = &mcp.SamplingCapabilities{}
		if caps.Sampling.Tools != nil {
			out.Sampling.Tools = &mcp.SamplingToolsCapabilities{}
		}
	}
	if caps.Elicitation != nil {
		e := *caps.Elicitation
		out.Elicitation = &e
	}
	if caps.RootsV2 != nil && b.PerSession() {
		out.Roots = &mcp.RootCapabilities{ListChanged: caps.RootsV2.ListChanged}
	}
	return out
}

// declareCaps sets the client capabilities caps (their encoding) in a raw
// _meta object (nil: none). A _meta without them gets them as its first
// member, on bytes; one that has them (or keys with escapes, which may
// spell them) is decoded and encoded.
func declareCaps(meta, caps json.RawMessage) (json.RawMessage, error) {
	const key = `"` + mcp.MetaKeyClientCapabilities + `":`
	meta = bytes.TrimSpace(meta)
	if len(meta) == 0 || string(meta) == "null" {
		out := make([]byte, 0, len(key)+len(caps)+2)
		return append(append(append(append(out, '{'), key...), caps...), '}'), nil
	}
	if meta[0] == '{' && bytes.IndexByte(meta, '\\') < 0 && jsonscan.Valid(meta) && wire.Member(meta, mcp.MetaKeyClientCapabilities) == nil {
		out := make([]byte, 0, len(meta)+len(key)+len(caps)+2)
		out = append(append(append(out, '{'), key...), caps...)
		if rest := bytes.TrimSpace(meta[1:]); len(rest) > 0 && rest[0] != '}' {
			out = append(out, ',')
		}
		return append(out, meta[1:]...), nil
	}
	m := map[string]json.RawMessage{}
	if len(meta) > 0 && string(meta) != "null" {
		if err := json.Unmarshal(meta, &m); err != nil {
			return nil, err
		}
	}
	m[mcp.MetaKeyClientCapabilities] = caps
	return json.Marshal(m)
}

// upstreamCapsJSON is the encoding of upstreamCaps(caps, b), kept on b for
// the last caps it was asked for: a client's calls carry the same
// capabilities (callEra reads them once for the same _meta bytes, so the
// pointer is the same too).
func upstreamCapsJSON(caps *mcp.ClientCapabilities, b *backend) (json.RawMessage, error) {
	if e := b.capsJSON.Load(); e != nil && e.caps == caps {
		return e.raw, nil
	}
	raw, err := json.Marshal(upstreamCaps(caps, b))
	if err != nil {
		return nil, err
	}
	b.capsJSON.Store(&capsEncoding{caps, raw})
	return raw, nil
}

// capsEncoding is one reading of upstreamCapsJSON.
type capsEncoding struct {
	caps *mcp.ClientCapabilities
	raw  json.RawMessage
}

func (s *Server) maxInputRounds() int {
	if s.opts.MaxInputRounds > 0 {
		return s.opts.MaxInputRounds
	}
	return defaultMaxInputRounds
}

// nextCall is what inputRound decided: the params of the next call (raw),
// an error for the call (err), or, with neither, that the bound was hit.
type nextCall struct {
	raw json.RawMessage
	err error
}

// inputRound serves one input_required result of a modern server to a
// legacy client (cell 4): each input request becomes a real request on the
// client's session ss, by the relay rules, and the answers make the params
// of the next call. final is true when raw is not an input_required result
// after all. *rounds counts the rounds; past Options.MaxInputRounds, next is
// empty.
func (s *Server) inputRound(ctx context.Context, ss *mcp.ServerSession, b *backend, re reqEra, raw json.RawMessage, fields map[string]json.RawMessage, rounds *int) (next nextCall, final bool) {
	var res struct {
		ResultType    string              `json:"resultType"`
		InputRequests mcp.InputRequestMap `json:"inputRequests"`
		RequestState  *string             `json:"requestState"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || res.ResultType != "input_required" {
		if err != nil && jsonscan.Contains(raw, []byte(`"resultType":"input_required"`)) {
			return nextCall{err: fmt.Errorf("upstream %q: its input_required result could not be decoded: %v", b.name, err)}, false
		}
		return nextCall{}, true
	}
	if *rounds >= s.maxInputRounds() {
		return nextCall{}, false
	}
	*rounds++
	if len(res.InputRequests) == 0 {
		return nextCall{err: fmt.Errorf("upstream %q is busy (it asked for no input and no result); retry later", b.name)}, false
	}
	answers := make(map[string]json.RawMessage, len(res.InputRequests))
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	for key, ir := range res.InputRequests {
		g.Go(func() error {
			ans, err := s.askLegacy(gctx, ss, b, re, ir)
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
			return nextCall{err: ctx.Err()}, false
		}
		return nextCall{err: err}, false
	}
	retry := maps.Clone(fields)
	var err error
	if retry["inputResponses"], err = json.Marshal(answers); err != nil {
		return nextCall{err: err}, false
	}
	if res.RequestState != nil {
		retry["requestState"], _ = json.Marshal(*res.RequestState)
	} else {
		delete(retry, "requestState")
	}
	params, err := json.Marshal(retry)
	if err != nil {
		return nextCall{err: err}, false
	}
	return nextCall{raw: params}, false
}

// askLegacy sends one input request of server b to the legacy client of ss,
// as the relays send an upstream's requests: the message names the server,
// includeContext is reduced, roots go only to a server of one client, and a
// capability the client did not declare is a -32021 error naming it.
func (s *Server) askLegacy(ctx context.Context, ss *mcp.ServerSession, b *backend, re reqEra, ir mcp.InputRequest) (mcp.Result, error) {
	switch p := ir.(type) {
	case *mcp.ElicitParams:
		if err := bridge.NeedCap("elicitation/create", b.name, elicitMode(p), re.caps); err != nil {
			return nil, err
		}
		q := *p
		q.Message = fmt.Sprintf("[%s] %s", b.name, q.Message)
		if q.ElicitationID != "" {
			s.relay.RememberElicitation(q.ElicitationID, b, ss)
		}
		return ss.Elicit(ctx, &q)
	case *mcp.CreateMessageWithToolsParams:
		if err := bridge.NeedCap("sampling/createMessage", b.name, "", re.caps); err != nil {
			return nil, err
		}
		q := *p
		q.IncludeContext = noContext(q.IncludeContext)
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
		if err := bridge.NeedCap("roots/list", b.name, "", re.caps); err != nil {
			return nil, err
		}
		if !b.PerSession() {
			return nil, relay.Refusal(b, "roots/list")
		}
		return ss.ListRoots(ctx, p)
	}
	return nil, fmt.Errorf("upstream %q asked for input of an unknown kind (%T)", b.name, ir)
}

// eraMetaKeys are the _meta keys by which a modern request describes itself.
var eraMetaKeys = []string{mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientInfo, mcp.MetaKeyClientCapabilities, mcp.MetaKeyLogLevel}

// stripEraMeta removes the era's keys from the raw _meta in fields (and
// _meta itself when nothing else is left).
func stripEraMeta(fields map[string]json.RawMessage) {
	raw, ok := fields["_meta"]
	if !ok || !bytes.Contains(raw, []byte("io.modelcontextprotocol")) && bytes.IndexByte(raw, '\\') < 0 { // an escaped key decodes the same
		return
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return
	}
	for _, k := range eraMetaKeys {
		delete(m, k)
	}
	if len(m) == 0 {
		delete(fields, "_meta")
		return
	}
	if out, err := json.Marshal(m); err == nil {
		fields["_meta"] = out
	}
}
