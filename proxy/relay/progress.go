package relay

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/internal/jsonscan"
	"github.com/manifold-mcp/manifold/proxy/internal/wire"
)

// ProgressSinkKey carries, in the context of a lean HTTP call that asked
// for progress, where its server's progress notifications go
// (progressRoutes.mapToken): the request's own event stream, in place of an
// SDK session.
type ProgressSinkKey struct{}

// ProgressSink takes one progress notification of a call, its token the
// client's own.
type ProgressSink func(*mcp.ProgressNotificationParams)

// progressRoutes maps the progress tokens the proxy sends upstream back to the
// downstream session and token that asked. A token is random (an upstream
// cannot guess another call's) and is honoured only from the upstream process
// it was sent to, so no server can inject progress into a call on another.
type progressRoutes struct {
	mu     sync.Mutex
	routes map[string]progressRoute // guarded by mu
}

type progressRoute struct {
	ctx    context.Context
	ss     *mcp.ServerSession
	token  any
	b      Backend                               // the server the call went to
	fixed  *mcp.ServerSession                    // and ss, if it went to ss's own process of b
	remote func(*mcp.ProgressNotificationParams) // in place of ss: a lean HTTP call's stream (the root's httpcall.go), or a retry forwarded by another replica (retryrelay.go)
}

// mapToken replaces a progress token in a raw _meta object with a token unique
// across upstreams and sessions, for a call sent to b's process (fixed's own,
// if fixed is set), and returns it (the route's id; empty when there is no
// token) and a func that forgets it.
func (p *progressRoutes) mapToken(ctx context.Context, ss *mcp.ServerSession, meta json.RawMessage, b Backend, fixed *mcp.ServerSession) (json.RawMessage, string, func(), error) {
	noop := func() {}
	sink, _ := ctx.Value(ProgressSinkKey{}).(ProgressSink) // a lean HTTP call's stream (the root's httpcall.go)
	// A _meta object without escapes that names the key once at most is
	// read and rewritten on its bytes: the token, if any, is the member the
	// scanner finds (wire.MemberSpan). Any other _meta is decoded and encoded
	// again, which leaves one token whatever the server's decoder keeps of
	// duplicate keys: never one the client chose.
	var rawTok json.RawMessage
	var start, end int
	trimmed := bytes.TrimSpace(meta)
	fast := len(trimmed) > 0 && trimmed[0] == '{' && bytes.IndexByte(meta, '\\') < 0 && bytes.Count(meta, MarkProgressToken) <= 1
	var m map[string]json.RawMessage
	if fast {
		if !jsonscan.Valid(meta) {
			return nil, "", noop, errors.New("_meta is not valid JSON")
		}
		var found bool
		if start, end, found = wire.MemberSpan(meta, "progressToken"); found {
			rawTok = meta[start:end]
		}
	} else {
		if err := json.Unmarshal(meta, &m); err != nil {
			return nil, "", noop, err
		}
		rawTok = m["progressToken"]
	}
	if rawTok == nil || ss == nil && sink == nil {
		return meta, "", noop, nil
	}
	tok, err := DecodeProgressToken(rawTok)
	if err != nil {
		return nil, "", noop, err
	}
	id := "mf-progress-" + rand.Text()
	quoted := []byte(`"` + id + `"`) // base32: nothing to escape
	var out json.RawMessage
	if fast {
		out = wire.Splice(meta, start, end, quoted)
	} else {
		m["progressToken"] = quoted
		if out, err = json.Marshal(m); err != nil {
			return nil, "", noop, err
		}
	}
	p.mu.Lock()
	if p.routes == nil {
		p.routes = make(map[string]progressRoute)
	}
	p.routes[id] = progressRoute{ctx: ctx, ss: ss, token: tok, b: b, fixed: fixed, remote: sink}
	p.mu.Unlock()
	return out, id, func() {
		p.mu.Lock()
		delete(p.routes, id)
		p.mu.Unlock()
	}, nil
}

// MarkProgressToken is the key of a progress token in a _meta object.
var MarkProgressToken = []byte(`"progressToken"`)

// DecodeProgressToken decodes a client's progress token as it was written:
// a string, or a number kept exact (json.Number), so that an integer beyond
// 2^53 comes back to the client unchanged.
func DecodeProgressToken(raw json.RawMessage) (any, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0:
	case raw[0] == '"' && bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) && jsonscan.Valid(raw):
		return string(raw[1 : len(raw)-1]), nil // a plain string: its bytes
	case (raw[0] == '-' || '0' <= raw[0] && raw[0] <= '9') && jsonscan.Valid(raw):
		return json.Number(raw), nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tok any
	if err := dec.Decode(&tok); err != nil {
		return nil, err
	}
	return tok, nil
}

// rebind sends the progress of route id from now on to the request that
// resumed a bridged call (a modern client's retry: over HTTP a request of
// its own, whose stream is the one the client reads), with that request's
// token if it has one, else the call's first.
func (p *progressRoutes) rebind(id string, ctx context.Context, ss *mcp.ServerSession, meta json.RawMessage) {
	if id == "" || ss == nil {
		return
	}
	var m struct {
		Token json.RawMessage `json:"progressToken"`
	}
	var tok any
	hasTok := len(meta) > 0 && json.Unmarshal(meta, &m) == nil && len(m.Token) > 0
	if hasTok {
		var err error
		tok, err = DecodeProgressToken(m.Token)
		hasTok = err == nil && tok != nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	rt, ok := p.routes[id]
	if !ok {
		return
	}
	rt.ctx, rt.ss, rt.remote = ctx, ss, nil
	if hasTok {
		rt.token = tok
	}
	p.routes[id] = rt
}

// rebindRemote sends the progress of route id from now on to send: the
// replica that forwarded a retry of the call, which sends it to the retry's
// own request.
func (p *progressRoutes) rebindRemote(id string, send func(*mcp.ProgressNotificationParams)) {
	if id == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if rt, ok := p.routes[id]; ok {
		rt.ss, rt.remote = nil, send
		p.routes[id] = rt
	}
}

// forward sends a progress notification from b's process (fixed's own, if
// fixed is set) to the session that asked, with its own token. Unknown or
// finished tokens, and tokens that were sent to another process, are dropped.
func (p *progressRoutes) forward(b Backend, fixed *mcp.ServerSession, params *mcp.ProgressNotificationParams) {
	if params == nil {
		return
	}
	id, ok := params.ProgressToken.(string)
	if !ok {
		return
	}
	p.mu.Lock()
	rt, ok := p.routes[id]
	p.mu.Unlock()
	if !ok {
		return
	}
	if rt.b != b || rt.fixed != fixed {
		b.Log().Warn("progress notification dropped: its token belongs to a call on another server or process", "token", id)
		return
	}
	fwd := *params
	fwd.ProgressToken = rt.token
	switch {
	case rt.remote != nil:
		rt.remote(&fwd)
	case rt.ss != nil:
		_ = rt.ss.NotifyProgress(rt.ctx, &fwd)
	}
}
