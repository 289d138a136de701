package era

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/manifold-mcp/manifold/proxy/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Version is the first protocol version without initialize: a request
// carries its version and client capabilities in _meta (2026-07-28).
const Version = "2026-07-28"

// LegacyVersions are the initialize-era versions served to clients, newest
// first; Versions adds the modern one. The SDK picks the era per request
// (ARCHITECTURE §3 "Protocol versions"): an initialize negotiates a legacy
// version, a request whose _meta names 2026-07-28 is modern.
var (
	LegacyVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}
	Versions       = append([]string{Version}, LegacyVersions...)
)

var (
	markProtocolVersionKey = []byte(`"` + KeyProtocolVersion + `"`)
	markProgressToken      = []byte(`"progressToken"`)
)

// The era of a tools/call frame, as Of reads it.
const (
	Legacy = iota // no 2026 _meta: the session's (initialize) era
	Modern        // a valid 2026-07-28 _meta the lean path serves
	SDK           // modern, but for the SDK to answer (see Of)
)

// Lean reads the era of a lean frame's params (Of): modern, and
// ok false for a frame the SDK must serve.
func Lean(params []byte) (modern, ok bool) {
	switch Of(params) {
	case Modern:
		return true, true
	case SDK:
		return false, false
	}
	return false, true
}

// Of reads the _meta of a request's params (raw JSON) as the SDK
// does (validateRequestMeta), cheaply: a frame whose _meta names a protocol
// version from 2026-07-28 on is modern. The lean path serves a modern frame
// only when the SDK would accept it as it is: a supported version, client
// capabilities and client info of the right shape, no per-request log level
// (which only the SDK's request context carries to the log relay), nothing
// escaped in _meta (which the scanner would read otherwise than the SDK).
// Every other modern frame goes to the SDK, which answers or refuses it.
func Of(params []byte) int {
	meta := wire.Member(params, "_meta")
	if len(meta) == 0 || meta[0] != '{' || !MayBeModern(meta) {
		return Legacy
	}
	return requestMemo.Get(MemoKey(meta), OfMeta)
}

var requestMemo wire.Memo[int]

// OfMeta is Of of a request whose _meta is the object meta.
func OfMeta(meta []byte) int {
	if bytes.IndexByte(meta, '\\') >= 0 {
		return SDK
	}
	pv := wire.Member(meta, KeyProtocolVersion)
	if len(pv) == 0 || pv[0] != '"' {
		return Legacy
	}
	var version string
	if err := json.Unmarshal(pv, &version); err != nil || version < Version {
		return Legacy
	}
	if !slices.Contains(Versions, version) {
		return SDK // -32022, with the versions served
	}
	if wire.Member(meta, KeyLogLevel) != nil {
		return SDK
	}
	caps := wire.Member(meta, KeyClientCapabilities)
	var c ClientCapsV2
	if len(caps) == 0 || caps[0] != '{' || json.Unmarshal(caps, &c) != nil {
		return SDK // -32602: missing or invalid
	}
	if info := wire.Member(meta, KeyClientInfo); info != nil {
		var impl mcp.Implementation
		if info[0] != '{' || json.Unmarshal(info, &impl) != nil {
			return SDK
		}
	}
	return Modern
}

// ClientCapsV2 is the wire shape of 2026 client capabilities, as the SDK
// decodes it (roots moved out of the legacy struct's shape).
type ClientCapsV2 struct {
	mcp.ClientCapabilities
	Roots *mcp.RootCapabilities `json:"roots,omitempty"` //lint:ignore SA1019 roots are part of the protocol versions served
}

// CallResult makes a raw tools/call result strict for a modern
// client, as the SDK makes the results it encodes: Manifold's identity in
// _meta serverInfo (in place of an upstream's), and resultType "complete"
// unless the result already says what it is (an input_required result
// passes through as it came). A result that is not a JSON object is left
// alone. For a result without _meta the bytes are the SDK's own.
func CallResult(raw json.RawMessage, serverInfo []byte) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) < 2 || raw[0] != '{' || raw[len(raw)-1] != '}' {
		return raw
	}
	entry := append([]byte(`"`+KeyServerInfo+`":`), serverInfo...)
	out := make([]byte, 0, len(raw)+len(entry)+64)
	meta := wire.Member(raw, "_meta")
	switch {
	case meta == nil:
		out = append(append(append(out, `{"_meta":{`...), entry...), '}')
		if body := bytes.TrimSpace(raw[1 : len(raw)-1]); len(body) > 0 {
			out = append(out, ',')
		}
		out = append(out, raw[1:]...)
	case meta[0] != '{':
		return raw // not an object: not a result the SDK would decode either
	default:
		at := cap(raw) - cap(meta) // meta is a slice of raw
		var inner []byte
		if old := wire.Member(meta, KeyServerInfo); old != nil {
			oat := cap(meta) - cap(old)
			inner = append(append(append(inner, meta[:oat]...), serverInfo...), meta[oat+len(old):]...)
		} else {
			inner = append(append(append(inner, '{'), entry...), meta[1:]...)
			if body := bytes.TrimSpace(meta[1 : len(meta)-1]); len(body) > 0 {
				inner = append(append(append([]byte{'{'}, entry...), ','), meta[1:]...)
			}
		}
		out = append(append(append(out, raw[:at]...), inner...), raw[at+len(meta):]...)
	}
	if wire.Member(out, "resultType") == nil {
		out = append(out[:len(out)-1], `,"resultType":"complete"}`...)
	}
	return out
}

// MemoKey is the memo key of a request's raw _meta for the era readings
// (metaEra, OfMeta), which never look at the progress token: the
// _meta itself, or for one without escapes that names the token once, the
// _meta with the token's value replaced by 0. A client that asks for
// progress sends a new token with every request, and would miss the memo
// every time.
func MemoKey(meta []byte) []byte {
	if bytes.IndexByte(meta, '\\') >= 0 || bytes.Count(meta, markProgressToken) != 1 {
		return meta
	}
	start, end, found := wire.MemberSpan(meta, "progressToken")
	if !found {
		return meta
	}
	return wire.Splice(meta, start, end, []byte("0"))
}

// MayBeModern reports whether a raw _meta may name a protocol version, and
// so be a modern request's: it has the key, or escapes that may spell it.
// Any other is an initialize-era request's, read without decoding it nor
// filling the memo with _meta that differ in a progress token each call.
func MayBeModern(meta []byte) bool {
	return bytes.IndexByte(meta, '\\') >= 0 || bytes.Contains(meta, markProtocolVersionKey)
}
