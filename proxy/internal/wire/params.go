package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"unicode/utf8"

	"github.com/manifold-mcp/manifold/internal/jsonscan"
)

// The members of a tools/call's params, split and joined as raw bytes on the
// lean paths: the frame was checked to be valid JSON once (Check), so
// the members are found by scanning, not decoded into a map and encoded back
// (ARCHITECTURE §3 "The hot path is lean").

// SplitParams returns the top-level members of params, a JSON object that
// was checked to be valid, by name, as slices of params (which the caller
// must not reuse while they are in use); the last one wins when a name repeats,
// as encoding/json decides. A member name written with escapes (or not
// UTF-8) sends the whole object through encoding/json, so that names mean
// what they mean to every other decoder.
func SplitParams(params []byte) (map[string]json.RawMessage, error) {
	fields := make(map[string]json.RawMessage, 4)
	p := bytes.TrimSpace(params)
	if len(p) == 0 || string(p) == "null" {
		return fields, nil
	}
	if p[0] != '{' {
		return nil, errors.New("params must be a JSON object")
	}
	i := jsonscan.SkipSpace(p, 1)
	for i < len(p) && p[i] == '"' {
		end := jsonscan.SkipString(p, i)
		key := p[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 || !utf8.Valid(key) {
			fields = make(map[string]json.RawMessage, 4)
			return fields, json.Unmarshal(p, &fields)
		}
		i = jsonscan.SkipSpace(p, end)
		if i >= len(p) || p[i] != ':' {
			return nil, errors.New("params is not a JSON object")
		}
		i = jsonscan.SkipSpace(p, i+1)
		vend := jsonscan.SkipValue(p, i)
		fields[string(key)] = p[i:vend:vend]
		i = jsonscan.SkipSpace(p, vend)
		if i < len(p) && p[i] == ',' {
			i = jsonscan.SkipSpace(p, i+1)
		}
	}
	if i >= len(p) || p[i] != '}' {
		return nil, errors.New("params is not a JSON object")
	}
	return fields, nil
}

// JoinParams is the JSON object of fields, members sorted by name (as
// encoding/json orders a map) with their raw values as they are. Every value
// must be valid JSON.
func JoinParams(fields map[string]json.RawMessage) []byte {
	keys := make([]string, 0, len(fields))
	n := 2
	for k, v := range fields {
		keys = append(keys, k)
		n += len(k) + len(v) + 4
	}
	slices.Sort(keys)
	out := make([]byte, 0, n)
	out = append(out, '{')
	for i, k := range keys {
		if i > 0 {
			out = append(out, ',')
		}
		out = AppendString(out, k)
		out = append(out, ':')
		out = append(out, fields[k]...)
	}
	return append(out, '}')
}

// AppendString appends s as a JSON string. A string of printable ASCII
// without quotes or backslashes (every exposed name, most others) is copied
// between quotes; any other goes through encoding/json.
func AppendString(dst []byte, s string) []byte {
	plain := len(s) < 256
	for i := 0; plain && i < len(s); i++ {
		c := s[i]
		plain = c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	if plain {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	b, _ := json.Marshal(s) // a string always encodes
	return append(dst, b...)
}

// RawString returns the value of a JSON string without escapes as it is, and
// any other through encoding/json; ok is false if raw is not a string.
func RawString(raw []byte) (string, bool) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' && bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// Member returns the raw value of the member key of obj, a valid JSON object
// (or nil), matched exactly as the SDK matches it: case-sensitively, the last
// one when repeated.
func Member(obj []byte, key string) []byte {
	if len(obj) == 0 || obj[0] != '{' {
		return nil
	}
	var val []byte
	for i := jsonscan.SkipSpace(obj, 1); i < len(obj) && obj[i] == '"'; {
		end := jsonscan.SkipString(obj, i)
		k := obj[i+1 : end-1]
		i = jsonscan.SkipSpace(obj, jsonscan.SkipSpace(obj, end)+1)
		vend := jsonscan.SkipValue(obj, i)
		if string(k) == key {
			val = obj[i:vend]
		}
		i = jsonscan.SkipSpace(obj, vend)
		if i < len(obj) && obj[i] == ',' {
			i = jsonscan.SkipSpace(obj, i+1)
		}
	}
	return val
}

// MarkIsError is how a raw tools/call result that is a tool error says so
// (as the SDK and most servers write it; jsonscan.Contains finds it).
var MarkIsError = []byte(`"isError":true`)
