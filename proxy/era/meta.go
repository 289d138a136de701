package era

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The _meta keys by which a 2026-07-28 request describes itself.
const (
	KeyProtocolVersion    = mcp.MetaKeyProtocolVersion
	KeyClientInfo         = mcp.MetaKeyClientInfo
	KeyClientCapabilities = mcp.MetaKeyClientCapabilities
	KeyLogLevel           = mcp.MetaKeyLogLevel //lint:ignore SA1019 the per-request log level is part of 2026-07-28
	KeyServerInfo         = mcp.MetaKeyServerInfo
)

// requestKeys describe the downstream request itself; they are never passed
// on as they came (the upstream face writes its own).
var requestKeys = []string{KeyProtocolVersion, KeyClientInfo, KeyClientCapabilities, KeyLogLevel}

// StripMeta returns m without the keys that describe a modern downstream
// request (protocol version, client info and capabilities, log level), so
// that what is forwarded carries only what the client meant for the tool
// (a progress token, a trace context). m is not modified; nil stays nil.
func StripMeta(m mcp.Meta) mcp.Meta {
	if m == nil {
		return nil
	}
	var out mcp.Meta
	for k, v := range m {
		if isRequestKey(k) {
			continue
		}
		if out == nil {
			out = make(mcp.Meta, len(m))
		}
		out[k] = v
	}
	return out
}

// StripMetaRaw is StripMeta for a raw _meta object. It returns nil when
// nothing is left, and raw unchanged if it is not a JSON object.
func StripMetaRaw(raw json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return raw
	}
	changed := false
	for _, k := range requestKeys {
		if _, ok := m[k]; ok {
			delete(m, k)
			changed = true
		}
	}
	if !changed {
		return raw
	}
	if len(m) == 0 {
		return nil
	}
	out, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return out
}

func isRequestKey(k string) bool {
	for _, r := range requestKeys {
		if k == r {
			return true
		}
	}
	return false
}
