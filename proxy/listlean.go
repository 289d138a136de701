package proxy

import (
	"bytes"
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/internal/jsonscan"
	"github.com/manifold-mcp/manifold/proxy/era"
	"github.com/manifold-mcp/manifold/proxy/session"
)

// The lean path of tools/list (ARCHITECTURE §3 "The hot path is lean"): a
// list whose answer is already prepared for the caller's view (listbytes.go)
// is written from those bytes, on stdio by the reader's goroutine and over
// HTTP without the SDK's transport, so that the SDK's JSON-RPC layer does
// not decode the request, then encode and re-validate a thousand tools it
// did not make.
//
// The lean path only ever serves a list the SDK's path has answered before
// for the same key (catalog, registry generation, view, protocol version,
// catalog mode, cursor, settled start): the first list of a view, an
// unknown cursor, a list before the upstreams' first start is over, and
// anything the SDK would read otherwise than the raw scanner (params other
// than a plain cursor and _meta, escapes, a request of another era than its
// session's) go to the SDK, which answers or refuses them as it always
// has. What the SDK's middleware does for a list is done here too: the
// session is recorded as having listed (list_changed), its catalog mode is
// decided, the list is counted in the metrics, and an answer that would
// need masking is left to the SDK. With traces on, every list goes to the
// SDK, whose middleware starts its span.

// leanList returns the JSON-RPC response to id, a tools/list request of ss
// whose params are params (raw JSON, nil when absent), from the list
// prepared for its view, and false when the SDK must answer it. modern says
// the request is of the 2026-07-28 era (era.Of); ss is nil for one
// over HTTP, which has no session (its _meta says who asks, in which
// version). ti is the caller's validated token, if any.
func (s *Server) leanList(ctx context.Context, ss *mcp.ServerSession, id, params []byte, modern bool, ti *auth.TokenInfo) ([]byte, bool) {
	if s.typed || s.obs.Tracing() {
		return nil, false
	}
	if !leanEra(ss, modern) {
		return nil, false
	}
	select {
	case <-s.run.ready:
	default:
		return nil, false // the SDK's path waits for the start (listing)
	}
	cursor, meta, ok := leanListParams(params)
	if !ok {
		return nil, false
	}
	start := time.Now()
	req := &mcp.ListToolsRequest{Session: ss, Params: &mcp.ListToolsParams{Cursor: cursor}}
	if ti != nil {
		req.Extra = &mcp.RequestExtra{TokenInfo: ti}
	}
	ctx = session.WithIdentity(ctx, req) // identityMiddleware
	if meta != nil {
		ctx = era.WithRequestMeta(ctx, meta) // the client's info, for its catalog mode
	}
	// eraMiddleware's learnClient has nothing to do here: s.run.ready is
	// closed only after Start, which with WaitForClient waits for the
	// first client to be learned (and without it learnClient does nothing).
	if ss != nil {
		// As listing does: recorded before the catalog is read, so that
		// a change made from now on is notified.
		s.relay.MarkListed(ss, catTools)
	}
	c := s.catalog.Load()
	if c == nil {
		return nil, false
	}
	search := s.sessionMode(ctx, ss, nil, c, true) == ModeSearch
	key, keep := s.listKeyFor(ctx, req, c, search)
	if !keep || !key.ready || !versionOfEra(key.version, modern) {
		return nil, false
	}
	v, ok := c.lists.m.Load(key)
	if !ok {
		return nil, false // the SDK's path prepares it
	}
	p := v.(*preparedList)
	head, ok := p.head(modern)
	if !ok {
		return nil, false
	}
	// frame.Response's envelope, with the result written in place.
	resp := make([]byte, 0, len(id)+len(head)+len(p.tools)+40)
	resp = append(append(append(resp, `{"jsonrpc":"2.0","id":`...), id...), `,"result":`...)
	at := len(resp)
	resp = append(append(append(append(resp, head...), p.tools...), '}'), '}')
	if s.opts.Redactor.Knows() {
		// guard.MaskingMiddleware: a list that holds a secret of the config
		// is masked on the SDK's path, which re-encodes it.
		result := resp[at : len(resp)-1]
		if masked := s.guard.Mask(result); len(masked) != len(result) || &masked[0] != &result[0] {
			return nil, false
		}
	}
	s.obs.Metrics().Request("tools/list", "", "", "ok", "", time.Since(start)) // telemetryMiddleware
	return resp, true
}

// leanListParams reads the params of a tools/list request (raw JSON, nil
// when absent) as the SDK decodes them, and reports false for any it might
// read otherwise or refuse: params that are not an object, a member other
// than cursor (a string) and _meta (an object), a repeated member, and
// anything escaped (a key or a cursor the scanner would have to unescape).
// meta is a slice of params.
func leanListParams(params []byte) (cursor string, meta []byte, ok bool) {
	if params == nil {
		return "", nil, true
	}
	if params[0] != '{' || bytes.IndexByte(params, '\\') >= 0 {
		return "", nil, false
	}
	seen := false
	for i := jsonscan.SkipSpace(params, 1); i < len(params) && params[i] == '"'; {
		end := jsonscan.SkipString(params, i)
		k := params[i+1 : end-1]
		i = jsonscan.SkipSpace(params, jsonscan.SkipSpace(params, end)+1)
		vend := jsonscan.SkipValue(params, i)
		v := params[i:vend]
		switch string(k) {
		case "cursor":
			if seen || len(v) < 2 || v[0] != '"' {
				return "", nil, false
			}
			cursor, seen = string(v[1:len(v)-1]), true
		case "_meta":
			if meta != nil || len(v) == 0 || v[0] != '{' {
				return "", nil, false
			}
			meta = v
		default:
			return "", nil, false
		}
		i = jsonscan.SkipSpace(params, vend)
		if i < len(params) && params[i] == ',' {
			i = jsonscan.SkipSpace(params, i+1)
		}
	}
	return cursor, meta, true
}
