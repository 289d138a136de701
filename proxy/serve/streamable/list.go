package streamable

import (
	"crypto/rand"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/manifold-mcp/manifold/internal/jsonscan"
	"github.com/manifold-mcp/manifold/proxy/era"
	"github.com/manifold-mcp/manifold/proxy/internal/wire"
	"github.com/manifold-mcp/manifold/proxy/serve/frame"
)

// The lean path of tools/list over HTTP (the root's listlean.go prepares
// the answer, Core.LeanList): a list whose answer is already prepared for
// the caller's view is written from those bytes without the SDK's transport.

// serveLeanList serves the POST r of session e on the lean path if its body
// is a tools/list request of the session's (initialize) era whose answer is
// prepared, and reports whether it did; if not, the SDK serves it. The
// answer is an event stream, as the SDK's: a priming event first for a
// client of 2025-11-25, then the answer, kept in the session's event store
// so that the stream can be resumed.
func (m *mcpEndpoint) serveLeanList(w http.ResponseWriter, r *http.Request, e *httpSession, body []byte) bool {
	if !jsonscan.Contains(body, []byte(`"tools/list"`)) {
		return false // not a list: checked once, by serveLean
	}
	ss := e.ss
	if ss == nil || modernSession(ss) || m.events == nil {
		return false // without an event store the SDK's streams have no ids
	}
	ip := ss.InitializeParams()
	if ip == nil || !leanHeaders(r, ip.ProtocolVersion) {
		return false
	}
	f := frame.Check(body)
	// The SDK writes the id it decoded: one it would spell otherwise
	// (1.5, escapes) is its to answer.
	if f.Kind != wire.Request || f.Method != "tools/list" || frame.NeedsMapping(f.ID) || era.Of(f.Params) != era.Legacy {
		return false
	}
	resp, ok := m.core.LeanList(r.Context(), ss, f.ID, f.Params, false, auth.TokenInfoFromContext(r.Context()))
	if !ok {
		return false
	}
	// An event stream, as the SDK answers: with a priming event first for
	// a client of 2025-11-25, without one before. (Clients may be given
	// either; some tell them apart, and the answer must not change with
	// the path that serves it.)
	stream := &leanStream{events: m.events, session: e.id, id: rand.Text(), client: r.Context()}
	if r.Header.Get("Mcp-Protocol-Version") >= primingVersion {
		stream.prime(r.Context(), w)
	} else {
		stream.open(w)
	}
	stream.write(r.Context(), w, resp)
	return true
}

// serveLeanModernList serves the POST r, a 2026-07-28 request (no
// session), on the lean path if its body is a tools/list request whose
// answer is prepared, and reports whether it did; if not, the stateless SDK
// handler serves it. The checks the SDK makes of such a request and the
// lean path would skip send it to the SDK: a protocol version in _meta
// that the header does not repeat, an Mcp-Method header that is not
// tools/list, a body the raw scanner would read otherwise. The answer is an
// event stream of one event, as the SDK's.
func (m *mcpEndpoint) serveLeanModernList(w http.ResponseWriter, r *http.Request, body []byte) bool {
	if !jsonscan.Contains(body, []byte(`"tools/list"`)) || r.Header.Get("Mcp-Method") != "tools/list" ||
		len(r.Header.Values("Last-Event-ID")) > 0 || !leanContent(r) {
		return false
	}
	f := frame.Check(body)
	if f.Kind != wire.Request || f.Method != "tools/list" || frame.NeedsMapping(f.ID) || era.Of(f.Params) != era.Modern {
		return false
	}
	meta := wire.Member(f.Params, "_meta") // era.Of: an object without escapes
	if v, ok := wire.RawString(wire.Member(meta, era.KeyProtocolVersion)); !ok || v != r.Header.Get("Mcp-Protocol-Version") {
		return false // -32020 from the SDK
	}
	resp, ok := m.core.LeanList(r.Context(), nil, f.ID, f.Params, true, auth.TokenInfoFromContext(r.Context()))
	if !ok {
		return false
	}
	// One event, as the SDK's stateless handler frames it (no id: it
	// keeps no events; a client may tell JSON from a stream).
	(*leanStream)(nil).open(w)
	out := make([]byte, 0, len(resp)+24)
	out = append(append(append(out, "event: message\ndata: "...), resp...), "\n\n"...)
	_, _ = w.Write(out)
	return true
}
