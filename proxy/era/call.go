//lint:file-ignore SA1019 roots are deprecated as of protocol 2026-07-28, but a modern server is told which of them the client has, roots among them (ARCHITECTURE §3 "Protocol versions").

package era

import (
	"bytes"
	"context"
	"encoding/json"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/internal/jsonscan"
	"github.com/manifold-mcp/manifold/proxy/internal/wire"
)

// This file reads the era of one tools/call (Request), and writes what a
// call's upstream request carries of the era: the downstream request's own
// keys taken out (StripCallMeta), the client's capabilities declared to a
// modern server (UpstreamCaps, DeclareCaps).

// Request is what the proxy knows of the era of one downstream request.
type Request struct {
	Modern bool
	Caps   *mcp.ClientCapabilities // the client's, per request (modern) or from initialize; never nil
	Client string                  // "name/version" of the client, if known
}

// OfRequest reads the era of a tools/call from its raw _meta (modern: the
// protocol version is 2026-07-28 or later), else from the session
// (modern when its initialize params name 2026-07-28 or later, and their
// capabilities).
func OfRequest(ss *mcp.ServerSession, meta json.RawMessage) Request {
	var e Request
	if len(meta) > 0 && MayBeModern(meta) {
		e = callEraMemo.Get(MemoKey(meta), OfRequestMeta)
	}
	if e.Modern {
		return e
	}
	if ss != nil {
		if ip := ss.InitializeParams(); ip != nil {
			// A session set up by a modern request stays modern: the SDK
			// refuses server->client requests on it.
			e.Modern = ip.ProtocolVersion >= Version
			e.Caps = ip.Capabilities
			if ip.ClientInfo != nil {
				e.Client = ip.ClientInfo.Name + "/" + ip.ClientInfo.Version
			}
		}
	}
	if e.Caps == nil {
		e.Caps = &mcp.ClientCapabilities{}
	}
	return e
}

var callEraMemo wire.Memo[Request]

// OfRequestMeta is OfRequest's reading of a raw _meta: a modern request's
// era, or the zero Request.
func OfRequestMeta(meta []byte) Request {
	var m struct {
		Version string              `json:"io.modelcontextprotocol/protocolVersion"`
		Caps    *ClientCapsV2       `json:"io.modelcontextprotocol/clientCapabilities"`
		Info    *mcp.Implementation `json:"io.modelcontextprotocol/clientInfo"`
	}
	_ = json.Unmarshal(meta, &m)
	if m.Version < Version {
		return Request{}
	}
	e := Request{Modern: true, Caps: &mcp.ClientCapabilities{}}
	if m.Caps != nil {
		e.Caps = CapsV1(m.Caps)
	}
	if m.Info != nil {
		e.Client = m.Info.Name + "/" + m.Info.Version
	}
	return e
}

// CapsV1 converts the wire shape of modern client capabilities (where roots
// is an object) to the SDK's.
func CapsV1(w *ClientCapsV2) *mcp.ClientCapabilities {
	c := w.ClientCapabilities
	c.RootsV2 = w.Roots
	return &c
}

// RequestMetaKey is the context key of a downstream request's own _meta
// (WithRequestMeta); its value is a json.RawMessage.
type RequestMetaKey struct{}

// WithRequestMeta records on ctx a downstream request's own _meta, before the
// lean path strips the era's keys from what it forwards, for OfRequest.
func WithRequestMeta(ctx context.Context, meta json.RawMessage) context.Context {
	return context.WithValue(ctx, RequestMetaKey{}, meta)
}

// RequestMeta returns the downstream request's own _meta that
// WithRequestMeta recorded on ctx, and whether there is one.
func RequestMeta(ctx context.Context) (json.RawMessage, bool) {
	m, ok := ctx.Value(RequestMetaKey{}).(json.RawMessage)
	return m, ok
}

// StripRequestMeta is StripMetaRaw of a modern request's raw _meta (the
// era's own keys removed; nil when nothing is left), read once for the same
// bytes (wire.Memo). The result is the caller's own copy.
func StripRequestMeta(meta json.RawMessage) json.RawMessage {
	out := stripMemo.Get(meta, func(b []byte) json.RawMessage {
		if s := StripMetaRaw(b); s != nil {
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

// UpstreamCaps are the capabilities declared to a modern server for a call
// of a client with caps, by the relay rules (proxy/relay): sampling without
// its context sub-capability (includeContext is reduced to none), roots only
// for a server whose process serves one client (oneClient: isolation =
// "session").
func UpstreamCaps(caps *mcp.ClientCapabilities, oneClient bool) *ClientCapsV2 {
	out := &ClientCapsV2{}
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
	if caps.RootsV2 != nil && oneClient {
		out.Roots = &mcp.RootCapabilities{ListChanged: caps.RootsV2.ListChanged}
	}
	return out
}

// DeclareCaps sets the client capabilities caps (their encoding) in a raw
// _meta object (nil: none). A _meta without them gets them as its first
// member, on bytes; one that has them (or keys with escapes, which may
// spell them) is decoded and encoded.
func DeclareCaps(meta, caps json.RawMessage) (json.RawMessage, error) {
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

// CapsMemo is the encoding of UpstreamCaps for one server, kept for the
// last caps it was asked for: a client's calls carry the same capabilities
// (OfRequest reads them once for the same _meta bytes, so the pointer is
// the same too). The zero CapsMemo is ready to use.
type CapsMemo struct {
	last atomic.Pointer[capsEncoding]
}

// JSON is the encoding of UpstreamCaps(caps, oneClient); oneClient is the
// same at every call of one CapsMemo.
func (m *CapsMemo) JSON(caps *mcp.ClientCapabilities, oneClient bool) (json.RawMessage, error) {
	if e := m.last.Load(); e != nil && e.caps == caps {
		return e.raw, nil
	}
	raw, err := json.Marshal(UpstreamCaps(caps, oneClient))
	if err != nil {
		return nil, err
	}
	m.last.Store(&capsEncoding{caps, raw})
	return raw, nil
}

// capsEncoding is one reading of CapsMemo.JSON.
type capsEncoding struct {
	caps *mcp.ClientCapabilities
	raw  json.RawMessage
}

// StripCallMeta removes the era's keys from the raw _meta in fields (and
// _meta itself when nothing else is left).
func StripCallMeta(fields map[string]json.RawMessage) {
	raw, ok := fields["_meta"]
	if !ok || !bytes.Contains(raw, []byte("io.modelcontextprotocol")) && bytes.IndexByte(raw, '\\') < 0 { // an escaped key decodes the same
		return
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return
	}
	for _, k := range requestKeys {
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

// ForUpstream writes in a tools/call's fields what its upstream request
// carries of the era: a modern request's own keys taken out of _meta (they
// describe this request, not the upstream's: StripCallMeta), and for a
// modern server (upModern) the capabilities of the client that asks
// (UpstreamCaps, encoded once per caps in memo, oneClient as there). An
// error is a _meta that could not be read.
func ForUpstream(fields map[string]json.RawMessage, e Request, upModern bool, memo *CapsMemo, oneClient bool) error {
	if e.Modern {
		StripCallMeta(fields)
	}
	if !upModern {
		return nil
	}
	caps, err := memo.JSON(e.Caps, oneClient)
	if err == nil {
		fields["_meta"], err = DeclareCaps(fields["_meta"], caps)
	}
	return err
}
