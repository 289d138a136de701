package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	cat "github.com/manifold-mcp/manifold/proxy/catalog"
	"github.com/manifold-mcp/manifold/proxy/era"
	"github.com/manifold-mcp/manifold/proxy/session"
)

// tools/list from prepared bytes: the tools of a list answer are encoded
// once per catalog, registry state and view (who sees them, at which
// protocol version, in which catalog mode, from which cursor) and every
// later list of that view is answered with the same bytes, which is both
// the cheap way (a catalog of a thousand tools is most of the encoding) and
// byte-stable (issue 12: two lists of one view are the same bytes). A new
// catalog (any change of upstreams, policy or pins) or a change of the
// SDK's registry starts over.

// maxListViews bounds the prepared lists a catalog keeps; past it, lists are
// prepared per request (a client can name cursors at will).
const maxListViews = 256

// listCache is a catalog's prepared tools/list answers.
type listCache struct {
	m sync.Map     // listKey -> *preparedList
	n atomic.Int64 // entries stored
}

// listKey is what a tools/list answer depends on besides the catalog.
type listKey struct {
	gen     uint64    // Server.regGen when the list was made
	view    *cat.View // the caller's view (who.go); nil when no rule narrows by identity
	version string    // the session's protocol version
	search  bool      // the session's catalog mode is search
	cursor  string
	ready   bool // the upstreams' first start is over (it settles ttlMs)
}

// preparedList is one prepared answer: the result without its tools, and
// the tools' encoding.
type preparedList struct {
	res   mcp.ListToolsResult // Tools nil
	tools json.RawMessage

	// The result as the SDK would write it up to its tools (rawToolList.head),
	// made at the first lean list (listlean.go): for a client of the
	// initialize era, and for a 2026-07-28 client (resultType and _meta
	// serverInfo added).
	legacyHead, modernHead atomic.Pointer[[]byte]
}

// listKeyFor returns the key of the tools/list req on c, and false when the
// answer must not be kept (an identity whose view c does not keep).
func (s *Server) listKeyFor(ctx context.Context, req mcp.Request, c *catalog, search bool) (listKey, bool) {
	k := listKey{gen: s.builder.regGen.Load(), search: search}
	select {
	case <-s.run.ready:
		k.ready = true
	default:
	}
	if r, ok := req.(*mcp.ListToolsRequest); ok && r.Params != nil {
		k.cursor = r.Params.Cursor
	}
	ss, _ := req.GetSession().(*mcp.ServerSession)
	k.version = era.SessionVersion(ss)
	if ss == nil {
		// A 2026-07-28 request over HTTP on the lean path: its _meta
		// names its version, as the SDK's per-request session has it.
		if v := servedMetaVersion(ctx); v != "" {
			k.version = v
		}
	}
	if c.Who {
		id := session.RequestIdentity(ctx, req)
		key := id.Key()
		k.view = c.ViewOf(key, id.Policy())
		if !c.KeptView(key, k.view) {
			return k, false // computed for this list alone
		}
	}
	return k, true
}

// preparedListFor returns the answer prepared for k on c, if any.
func (c *catalog) preparedListFor(k listKey) (mcp.Result, bool) {
	p, ok := c.lists.m.Load(k)
	if !ok {
		return nil, false
	}
	return p.(*preparedList).result(), true
}

// prepareList encodes the tools of res, keeps them for k on c (within
// maxListViews) and returns the answer.
func (c *catalog) prepareList(k listKey, res *mcp.ListToolsResult) mcp.Result {
	tools, err := json.Marshal(res.Tools)
	if err != nil || res.Tools == nil {
		return res // the SDK will say what is wrong
	}
	p := &preparedList{res: *res, tools: tools}
	p.res.Tools = nil
	if c.lists.n.Add(1) <= maxListViews {
		if actual, loaded := c.lists.m.LoadOrStore(k, p); loaded {
			p = actual.(*preparedList) // the first one made: every list of k the same bytes
		}
	}
	return p.result()
}

func (p *preparedList) result() mcp.Result {
	return &rawToolList{ListToolsResult: p.res, tools: p.tools}
}

// rawToolList is a tools/list answer whose tools are prepared bytes. The
// SDK may still set its _meta and resultType (they are encoded); a
// middleware that decodes it again (masking) gets a typed list.
type rawToolList struct {
	mcp.ListToolsResult
	tools json.RawMessage // nil once decoded
	// cacheless: for a session of the initialize era, encoded without the
	// 2026-07-28 cache fields (legacyCacheMiddleware).
	cacheless bool
}

// placeholder ends the encoding of the rest of the result, whose last member
// is tools, in place of the prepared tools.
var placeholder = []byte(`"tools":[]}`)

func (r *rawToolList) MarshalJSON() ([]byte, error) {
	if r.tools == nil {
		rest := r.ListToolsResult
		b, err := json.Marshal(&rest)
		if err != nil || !r.cacheless {
			return b, err
		}
		return era.DropCacheFields(b), nil
	}
	head, err := r.head()
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(head)+len(r.tools)+1)
	return append(append(append(out, head...), r.tools...), '}'), nil
}

// head is the encoding of r up to its prepared tools: the result is head,
// the tools, and '}'.
func (r *rawToolList) head() ([]byte, error) {
	rest := r.ListToolsResult
	rest.Tools = []*mcp.Tool{}
	b, err := json.Marshal(&rest)
	if err != nil {
		return nil, err
	}
	if !bytes.HasSuffix(b, placeholder) {
		return nil, errNoTools
	}
	b = b[:len(b)-len(placeholder)+len(`"tools":`)]
	if r.cacheless {
		b = era.DropCacheFields(b)
	}
	return b, nil
}

// UnmarshalJSON decodes a list (masking does): the tools are then its own.
func (r *rawToolList) UnmarshalJSON(b []byte) error {
	r.tools = nil
	return json.Unmarshal(b, &r.ListToolsResult)
}

var errNoTools = jsonError("tools/list: the encoded result has no tools member")

type jsonError string

func (e jsonError) Error() string { return string(e) }
