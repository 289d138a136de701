package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"

	"github.com/manifold-mcp/manifold/internal/jsonscan"
)

// The ids of server→client requests of legacy HTTP sessions, with replicas
// (proxy/answerrelay.go). A replica writes each such request (elicitation/create,
// sampling/createMessage, roots/list) with its JSON-RPC id N replaced by the
// string "mr.REPLICA.B", B the raw JSON of N in unpadded base64url, so that
// whichever replica receives the client's answer knows which one asked. The
// rewrite works on the raw bytes (jsonscan): a message is never decoded.

// answerIDPrefix starts a tagged id.
const answerIDPrefix = "mr."

// maxTaggedID bounds the base64 part of a tagged id: the SDK numbers its
// requests, so anything longer was not written by a replica.
const maxTaggedID = 96

// MemberSpan returns the start and end of the value of the last member key
// of the JSON object obj (keys compared as written, unescaped), and false
// when it has none.
func MemberSpan(obj []byte, key string) (int, int, bool) {
	i := jsonscan.SkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return 0, 0, false
	}
	start, end, found := 0, 0, false
	for i = jsonscan.SkipSpace(obj, i+1); i < len(obj) && obj[i] == '"'; {
		kend := jsonscan.SkipString(obj, i)
		k := obj[i+1 : max(kend-1, i+1)]
		i = jsonscan.SkipSpace(obj, jsonscan.SkipSpace(obj, kend)+1)
		vend := jsonscan.SkipValue(obj, i)
		if string(k) == key && vend > i {
			start, end, found = i, vend, true
		}
		i = jsonscan.SkipSpace(obj, vend)
		if i < len(obj) && obj[i] == ',' {
			i = jsonscan.SkipSpace(obj, i+1)
		}
	}
	return start, end, found
}

// Splice returns b with b[start:end] replaced by v.
func Splice(b []byte, start, end int, v []byte) []byte {
	out := make([]byte, 0, len(b)-(end-start)+len(v))
	return append(append(append(out, b[:start]...), v...), b[end:]...)
}

// TagID returns the tagged id (a JSON string) of raw, the id as the SDK
// wrote it, for replica.
func TagID(replica string, raw []byte) []byte {
	return strconv.AppendQuote(nil, answerIDPrefix+replica+"."+base64.RawURLEncoding.EncodeToString(raw))
}

// untagID parses raw, an id as a client sent it, as a tagged id: the
// replica it names and the original id's raw JSON (a number or a string).
// It returns false for any other id.
func untagID(raw []byte) (replica string, orig []byte, ok bool) {
	if len(raw) == 0 || raw[0] != '"' || len(raw) > 2+6*(len(answerIDPrefix)+1+64+maxTaggedID) {
		return "", nil, false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil || len(s) <= len(answerIDPrefix) || s[:len(answerIDPrefix)] != answerIDPrefix {
		return "", nil, false
	}
	s = s[len(answerIDPrefix):]
	dot := bytes.IndexByte([]byte(s), '.')
	if dot <= 0 || dot > 64 || len(s)-dot-1 > maxTaggedID {
		return "", nil, false
	}
	replica = s[:dot]
	for _, c := range []byte(replica) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z') {
			return "", nil, false
		}
	}
	orig, err := base64.RawURLEncoding.DecodeString(s[dot+1:])
	if err != nil || len(orig) == 0 || !jsonscan.Valid(orig) {
		return "", nil, false
	}
	if c := orig[0]; c != '"' && c != '-' && !(c >= '0' && c <= '9') {
		return "", nil, false // an id is a number or a string
	}
	return replica, orig, true
}

// tagMessage tags the id of msg (one JSON-RPC message) when it is a request
// (a method and an id), and the requestId of a notifications/cancelled,
// which names such a request. It returns msg unchanged otherwise.
func tagMessage(msg []byte, replica string) []byte {
	ms, me, hasMethod := MemberSpan(msg, "method")
	if !hasMethod {
		return msg
	}
	if s, e, ok := MemberSpan(msg, "id"); ok {
		if string(msg[s:e]) == "null" {
			return msg
		}
		return Splice(msg, s, e, TagID(replica, msg[s:e]))
	}
	if string(msg[ms:me]) != `"notifications/cancelled"` {
		return msg
	}
	ps, pe, ok := MemberSpan(msg, "params")
	if !ok {
		return msg
	}
	params := msg[ps:pe]
	s, e, ok := MemberSpan(params, "requestId")
	if !ok || string(params[s:e]) == "null" {
		return msg
	}
	return Splice(msg, ps, pe, Splice(params, s, e, TagID(replica, params[s:e])))
}

// forEach applies f to each message of body (one JSON-RPC message, or a
// batch: an array of them) and returns the new body, or body itself when f
// changed nothing.
func forEach(body []byte, f func(msg []byte) []byte) []byte {
	i := jsonscan.SkipSpace(body, 0)
	if i >= len(body) {
		return body
	}
	switch body[i] {
	case '{':
		end := jsonscan.SkipValue(body, i)
		msg := body[i:end]
		if out := f(msg); !SameBytes(out, msg) {
			return Splice(body, i, end, out)
		}
		return body
	case '[':
		var out []byte
		last := 0 // body[last:] is not yet copied to out
		for i = jsonscan.SkipSpace(body, i+1); i < len(body) && body[i] == '{'; {
			end := jsonscan.SkipValue(body, i)
			if m := f(body[i:end]); !SameBytes(m, body[i:end]) {
				out = append(append(out, body[last:i]...), m...)
				last = end
			}
			i = jsonscan.SkipSpace(body, end)
			if i < len(body) && body[i] == ',' {
				i = jsonscan.SkipSpace(body, i+1)
			}
		}
		if out == nil {
			return body
		}
		return append(out, body[last:]...)
	}
	return body
}

// SameBytes reports whether a and b are the same slice (f returned its
// argument).
func SameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// TagRequests tags the requests in p, one write of the SDK's to a
// response: a JSON body, or SSE events whose data lines each hold one
// message. It returns p itself when there is nothing to tag.
func TagRequests(p []byte, replica string) []byte {
	if !bytes.Contains(p, []byte(`"method"`)) {
		return p // no request, no cancellation: most writes
	}
	tag := func(msg []byte) []byte { return tagMessage(msg, replica) }
	if i := jsonscan.SkipSpace(p, 0); i < len(p) && (p[i] == '{' || p[i] == '[') {
		return forEach(p, tag)
	}
	var out []byte
	last := 0
	for start := 0; start < len(p); {
		end := bytes.IndexByte(p[start:], '\n')
		if end < 0 {
			end = len(p)
		} else {
			end += start
		}
		if line := p[start:end]; bytes.HasPrefix(line, []byte("data:")) {
			ds := start + len("data:")
			if ds < end && p[ds] == ' ' {
				ds++
			}
			if m := forEach(p[ds:end], tag); !SameBytes(m, p[ds:end]) {
				out = append(append(out, p[last:ds]...), m...)
				last = end
			}
		}
		start = end + 1
	}
	if out == nil {
		return p
	}
	return append(out, p[last:]...)
}

// RelayedAnswer is a client's answer to a tagged request of another
// replica, its id restored.
type RelayedAnswer struct {
	Replica string
	Msg     []byte
}

// RouteAnswers sorts the messages of body, a POST of a legacy session, for
// replica (this one): an answer (an id, no method) whose tagged id names
// this replica gets its original id back; one that names another is taken
// out of the body and returned in others, its id restored. It returns the
// rest of the body (nil when nothing is left), body itself when no message
// carries a tagged id. Ids not in the tagged form pass unchanged.
func RouteAnswers(body []byte, replica string) (rest []byte, others []RelayedAnswer) {
	if !bytes.Contains(body, []byte(answerIDPrefix)) && !bytes.Contains(body, []byte(`\u`)) {
		return body, nil // no tagged id, even one written with escapes: most bodies
	}
	classify := func(msg []byte) (restored []byte, to string) {
		if _, _, ok := MemberSpan(msg, "method"); ok {
			return msg, ""
		}
		s, e, ok := MemberSpan(msg, "id")
		if !ok {
			return msg, ""
		}
		r, orig, ok := untagID(msg[s:e])
		if !ok {
			return msg, ""
		}
		return Splice(msg, s, e, orig), r
	}
	i := jsonscan.SkipSpace(body, 0)
	if i < len(body) && body[i] == '{' {
		msg, to := classify(body)
		switch {
		case to == "":
			return body, nil
		case to == replica:
			return msg, nil
		}
		return nil, []RelayedAnswer{{Replica: to, Msg: msg}}
	}
	var kept [][]byte
	changed := false
	forEach(body, func(m []byte) []byte {
		msg, to := classify(m)
		switch {
		case to == "":
			kept = append(kept, m)
		case to == replica:
			kept = append(kept, msg)
			changed = true
		default:
			others = append(others, RelayedAnswer{Replica: to, Msg: msg})
			changed = true
		}
		return m
	})
	if !changed {
		return body, nil
	}
	if len(kept) == 0 {
		return nil, others
	}
	rest = append(append([]byte{'['}, bytes.Join(kept, []byte{','})...), ']')
	return rest, others
}

// IsAnswer reports whether msg is one JSON-RPC response, decoded strictly
// (keys unescaped, exactly as the SDK reads them): an id, a result or an
// error, and no method. A replica injects nothing else into a session.
func IsAnswer(msg []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil {
		return false
	}
	_, method := m["method"]
	id, hasID := m["id"]
	_, result := m["result"]
	_, errMember := m["error"]
	return !method && hasID && string(id) != "null" && (result != errMember)
}
