package redact

import (
	"bytes"
	"encoding/json"
)

// JSON returns raw, a JSON value that Manifold passes on (an upstream's
// result, error or notification), with every known secret in its strings
// replaced by [Mask]. Credential shapes are kept: they may be the content.
//
// It is built for the hot path: when raw holds no known secret in any wire
// spelling ([Redactor.Contains]), raw itself is returned, unchanged and
// without an allocation. Only when one is found is raw decoded, each string
// (object keys too) masked as [Redactor.Known] masks text, a number whose
// digits hold a secret replaced by the string [Mask], and the value encoded
// again, without HTML escaping; members keep their values but not their
// order or spacing. Text that is not JSON is masked as bytes.
func (r *Redactor) JSON(raw []byte) []byte {
	sn := r.snapshot()
	if sn == nil || !sn.contains(raw) {
		return raw
	}
	if !json.Valid(raw) {
		return []byte(sn.wire.Replace(string(raw)))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return []byte(sn.wire.Replace(string(raw)))
	}
	v, changed := sn.maskValue(v)
	if !changed {
		return raw
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte(sn.wire.Replace(string(raw)))
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// maskValue masks the known secrets in v, a decoded JSON value, and reports
// whether it changed anything.
func (sn *snapshot) maskValue(v any) (any, bool) {
	switch v := v.(type) {
	case string:
		m := sn.repl.Replace(v)
		return m, m != v
	case json.Number:
		if m := sn.repl.Replace(string(v)); m != string(v) {
			return Mask, true
		}
	case []any:
		changed := false
		for i, e := range v {
			var c bool
			if v[i], c = sn.maskValue(e); c {
				changed = true
			}
		}
		return v, changed
	case map[string]any:
		changed := false
		for k, e := range v {
			m, c := sn.maskValue(e)
			if mk := sn.repl.Replace(k); mk != k {
				delete(v, k)
				k, c = mk, true
			}
			if c {
				v[k] = m
				changed = true
			}
		}
		return v, changed
	}
	return v, false
}
