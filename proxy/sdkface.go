package proxy

import (
	"context"
	"encoding/json"
	"maps"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/proxy/era"
	"github.com/manifold-mcp/manifold/proxy/internal/wire"
	"github.com/manifold-mcp/manifold/proxy/session"
)

// The SDK path's era translation: the only root file that branches on the
// client's era. The SDK's middleware chain is the path both faces share
// (every HTTP request, and the stdio frames the lean loop passes on): here a
// request of either era is made era-neutral before routingMiddleware sees
// it, and its result is given what the client's era has (proxy/era knows
// how), so that route, the catalog, listing and the call pipeline never ask
// which era a client speaks; they pass on a version (era.SessionVersion,
// requestVersion) to the era functions that need one. Here too: who the
// client of a request is (clientOf: its session's initialize, or a modern
// request's own _meta), and the lean list's copies of the SDK path's era
// decisions (leanEra, versionOfEra, preparedList.head). The faces' lean
// calls make their results strict themselves (era.CallResult).

// modernSession reports whether ss speaks 2026-07-28: over stdio once
// server/discover or the first modern request set it up, over HTTP every
// stateless per-request session of a modern request.
func modernSession(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	ip := ss.InitializeParams()
	return ip != nil && ip.ProtocolVersion >= era.Version
}

// clientOf returns the client of a request on ss: a modern request's own
// _meta clientInfo (a request carries it, and over stdio each may differ),
// else the session's (initialize, or the request that set a modern session
// up).
func clientOf(ctx context.Context, ss *mcp.ServerSession, meta mcp.Meta) clientIdent {
	var id clientIdent
	if ss != nil {
		if ip := ss.InitializeParams(); ip != nil {
			id.Protocol = ip.ProtocolVersion
			if ip.ClientInfo != nil {
				id.Name, id.Version = ip.ClientInfo.Name, ip.ClientInfo.Version
			}
		}
	}
	id.Modern = modernSession(ss)
	id.Identity = session.IdentityFrom(ctx).Subject
	var raw json.RawMessage
	if m, ok := era.RequestMeta(ctx); ok {
		raw = m
	} else if meta != nil {
		raw, _ = json.Marshal(meta)
	}
	if len(raw) > 0 {
		if m := metaClientMemo.Get(raw, metaClient); m.modern {
			id.Modern, id.Protocol = true, m.protocol
			if m.hasInfo {
				id.Name, id.Version = m.name, m.version
			}
		}
	}
	return id
}

var metaClientMemo wire.Memo[metaClientInfo]

// servedMetaVersion returns the protocol version the _meta recorded on ctx
// (era.WithRequestMeta) names, if it is a 2026-07-28 request's and one the
// proxy serves; else "".
func servedMetaVersion(ctx context.Context) string {
	raw, ok := era.RequestMeta(ctx)
	if !ok || len(raw) == 0 {
		return ""
	}
	if m := metaClientMemo.Get(raw, metaClient); m.modern && slices.Contains(era.Versions, m.protocol) {
		return m.protocol
	}
	return ""
}

// metaClientInfo is what clientOf reads of a raw _meta.
type metaClientInfo struct {
	modern                  bool
	protocol, name, version string
	hasInfo                 bool
	caps                    []string // capNames of the capabilities it declares
}

func metaClient(raw []byte) metaClientInfo {
	var m struct {
		Version string              `json:"io.modelcontextprotocol/protocolVersion"`
		Info    *mcp.Implementation `json:"io.modelcontextprotocol/clientInfo"`
		Caps    *era.ClientCapsV2   `json:"io.modelcontextprotocol/clientCapabilities"`
	}
	if json.Unmarshal(raw, &m) != nil || m.Version < era.Version {
		return metaClientInfo{}
	}
	out := metaClientInfo{modern: true, protocol: m.Version}
	if m.Caps != nil {
		out.caps = capNames(era.CapsV1(m.Caps))
	}
	if m.Info != nil {
		out.hasInfo, out.name, out.version = true, m.Info.Name, m.Info.Version
	}
	return out
}

// requestVersion is the protocol version of a request on ss: a modern
// request's own (its _meta), else its session's (era.SessionVersion).
func requestVersion(ctx context.Context, ss *mcp.ServerSession) string {
	version := era.SessionVersion(ss)
	if m, ok := era.RequestMeta(ctx); ok && len(m) > 0 {
		if id := clientOf(ctx, ss, nil); id.Modern {
			version = id.Protocol
		}
	}
	return version
}

// eraMiddleware translates one request on the SDK path between the client's
// era and the era-neutral routingMiddleware inside it. A modern request: the
// first one learns the client (over stdio it fixes what upstreams are
// offered, as initialize does for a legacy client), a call's _meta loses the
// era's own keys, and the result gets resultType and Manifold's serverInfo.
// A legacy request: a read or prompt relayed from a modern upstream loses
// the 2026-07-28 fields.
func (s *Server) eraMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if !modernSession(ss) {
			res, err := next(ctx, method, req)
			if err != nil || res == nil {
				return res, err
			}
			switch method {
			case "resources/read", "prompts/get":
				// A modern upstream's answer, relayed: a legacy client
				// gets it without the 2026-07-28 fields.
				return era.LegacyResult(res), nil
			}
			return res, nil
		}
		// A modern client declares its capabilities on every request; over
		// stdio the first one fixes what upstreams are offered, as
		// initialize does for a legacy client.
		s.learnClient(clientCapsOf(ss), true)
		if r, ok := req.(*mcp.CallToolRequest); ok && method == "tools/call" && r.Params != nil {
			// The era's own _meta keys describe this request, not
			// the upstream's; the upstream face writes its own.
			p := *r.Params
			p.Meta = era.StripMeta(p.Meta)
			req = &mcp.CallToolRequest{Session: r.Session, Params: &p, Extra: r.Extra}
		}
		res, err := next(ctx, method, req)
		if err != nil {
			return res, err
		}
		if r, ok := res.(*rawCallResult); ok {
			// A call answered with the upstream's bytes (httplean.go):
			// made strict on the bytes, as the lean paths do.
			r.raw = era.CallResult(r.raw, s.serverInfo)
			return r, nil
		}
		return era.ModernResult(res, s.serverInfo), nil
	}
}

// learnDiscovered learns the client of ss once server/discover set it up:
// discover is of the 2026-07-28 era.
func (s *Server) learnDiscovered(ss *mcp.ServerSession) {
	s.learnClient(clientCapsOf(ss), true)
}

// setCacheable gives a modern request's list, read and discover answers
// their ttlMs and cacheScope (ServerOptions.SetCacheable, cacheFields).
// Legacy clients get what the SDK gives them today, untouched.
func (s *Server) setCacheable(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if !modernSession(ss) {
		return
	}
	s.cacheFields(req, c)
}

// leanEra reports whether the lean list (listlean.go) may answer a request
// of the era modern says on ss: only one of its session's era, and over HTTP
// (ss nil) only a modern one; the SDK answers any other.
func leanEra(ss *mcp.ServerSession, modern bool) bool {
	return !(ss == nil && !modern || ss != nil && (ss.InitializeParams() == nil || modernSession(ss) != modern))
}

// versionOfEra reports whether version is of the era modern says.
func versionOfEra(version string, modern bool) bool {
	return (version >= era.Version) == modern
}

// head returns the result p is, encoded as the SDK encodes it for a client
// of the initialize era, or for a 2026-07-28 client (modern: resultType
// "complete" and Manifold's identity in _meta serverInfo, in place of any
// other, as eraMiddleware's era.ModernResult and then the SDK's own
// annotation make it), up to its tools (rawToolList.head). Made once per
// prepared list and era.
func (p *preparedList) head(modern bool) ([]byte, bool) {
	at := &p.legacyHead
	if modern {
		at = &p.modernHead
	}
	if b := at.Load(); b != nil {
		return *b, true
	}
	r := &rawToolList{ListToolsResult: p.res, tools: p.tools, cacheless: !modern}
	if modern {
		meta := maps.Clone(r.Meta)
		if meta == nil {
			meta = mcp.Meta{}
		}
		meta[era.KeyServerInfo] = implementation()
		r.Meta = meta
		r.ResultType = "complete"
	}
	b, err := r.head()
	if err != nil {
		return nil, false // the SDK says what is wrong
	}
	if !at.CompareAndSwap(nil, &b) {
		b = *at.Load() // the first one made: every list the same bytes
	}
	return b, true
}

// legacyCacheMiddleware takes the 2026-07-28 cache fields (ttlMs,
// cacheScope) out of the answers to a session of the initialize era: the
// SDK's list and read results always encode them. Outermost, after
// masking, which decodes results into their own types.
func (s *Server) legacyCacheMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil || res == nil || !legacySession(req) {
			return res, err
		}
		switch r := res.(type) {
		case *rawToolList:
			r.cacheless = true // its head is encoded without them
			return r, nil
		case mcp.CacheableResult:
			return cacheless{r}, nil
		}
		return res, nil
	}
}

// legacySession reports whether req comes from a session that
// initialized at a version of the initialize era.
func legacySession(req mcp.Request) bool {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if ss == nil {
		return false
	}
	ip := ss.InitializeParams()
	return ip != nil && ip.ProtocolVersion < era.Version
}

// cacheless is a result encoded without its cache fields.
type cacheless struct{ mcp.CacheableResult }

func (c cacheless) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(c.CacheableResult)
	if err != nil {
		return nil, err
	}
	return era.DropCacheFields(b), nil
}
