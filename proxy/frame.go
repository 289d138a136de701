package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/manifold-mcp/manifold/internal/jsonscan"
)

// This file decides what one downstream stdio line means before anything else
// reads it. The lean path and the SDK must agree on that meaning, and the SDK
// ends the whole session on any frame it cannot decode, so every line is
// classified here exactly once: a request, a notification, a response, or a
// bad line with the JSON-RPC error that answers it.

// maxFrameDepth is the nesting the SDK's decoder accepts (go-sdk
// internal/json defaultMaxDepth); deeper frames would end its session.
const maxFrameDepth = 1000

// frameKind says what a checked line is.
type frameKind int

const (
	frameRequest      frameKind = iota // method and id
	frameNotification                  // method, no id
	frameResponse                      // result or error, id
	frameBad                           // answered with badFrame.err, or dropped
)

// frame is one checked downstream line.
type frame struct {
	kind frameKind
	// msg is the line without surrounding whitespace.
	msg []byte
	// method is the decoded method of a request or notification.
	method string
	// id, params, result and errVal are the raw top-level values; nil when
	// absent. They are slices of msg.
	id, params, result, errVal []byte
	// idAt is the offset of id in msg.
	idAt int
	// bad is set for frameBad: the error to answer with, or nil to drop
	// the line (a malformed response, which is never answered).
	bad *jsonrpc.Error
	// badID is the id to answer a bad line with: the frame's id if it was a
	// valid one, otherwise null.
	badID json.RawMessage
	// why says, for a dropped line, what was wrong with it.
	why string
}

var nullID = json.RawMessage("null")

// members the JSON-RPC envelope is made of; a case variant of any of them is
// refused, since Go decoders disagree on whether it counts.
var envelopeKeys = [...]string{"jsonrpc", "id", "method", "params", "result", "error"}

// checkFrame classifies one line read from the downstream client. It never
// fails: a line that is not a usable JSON-RPC message comes back as frameBad.
func checkFrame(line []byte) frame {
	msg := bytes.TrimSpace(line)
	f := frame{kind: frameBad, msg: msg, badID: nullID}
	parseErr := func(format string, args ...any) frame {
		f.bad = &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "parse error: " + fmt.Sprintf(format, args...)}
		return f
	}
	invalid := func(format string, args ...any) frame {
		f.bad = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: " + fmt.Sprintf(format, args...)}
		return f
	}
	if !utf8.Valid(msg) {
		return parseErr("the line is not valid UTF-8; send one JSON-RPC message per line, UTF-8 encoded")
	}
	// jsonscan.Valid, as encoding/json, refuses JSON nested deeper than
	// jsonscan.MaxDepth levels.
	deep := depth(msg)
	if deep > jsonscan.MaxDepth {
		return invalid("the message nests deeper than %d levels", maxFrameDepth)
	}
	if !jsonscan.Valid(msg) {
		if bytes.HasPrefix(msg, []byte("\uFEFF")) {
			return parseErr("the line starts with a byte order mark; send JSON without a BOM")
		}
		return parseErr("the line is not one JSON value; send one JSON-RPC message per line")
	}
	if msg[0] != '{' {
		if msg[0] == '[' {
			return invalid("JSON-RPC batches are not part of MCP 2025-06-18 and later; send one message per line")
		}
		return invalid("a message must be a JSON object")
	}

	var jsonrpcVal, method []byte
	seen := 0         // bit i: envelopeKeys[i] was present
	keyProblem := ""  // the first duplicate or variant envelope key
	idUnsure := false // "id" was repeated or spelled oddly
	for i := jsonscan.SkipSpace(msg, 1); i < len(msg) && msg[i] == '"'; {
		end := jsonscan.SkipString(msg, i)
		key := msg[i+1 : end-1]
		i = jsonscan.SkipSpace(msg, end) + 1 // past ':'
		i = jsonscan.SkipSpace(msg, i)
		vend := jsonscan.SkipValue(msg, i)
		val := msg[i:vend]
		at := i
		if i = jsonscan.SkipSpace(msg, vend); i < len(msg) && msg[i] == ',' {
			i = jsonscan.SkipSpace(msg, i+1)
		}
		k := envelopeKey(key)
		if k >= 0 {
			switch {
			case !bytes.Equal(key, []byte(envelopeKeys[k])):
				if keyProblem == "" {
					keyProblem = fmt.Sprintf("member %s must be spelled %q (lower case, no escapes)", strconv.Quote(string(key)), envelopeKeys[k])
				}
				if k == 1 {
					idUnsure = true
				}
				continue
			case seen&(1<<k) != 0:
				if keyProblem == "" {
					keyProblem = fmt.Sprintf("member %q appears twice", envelopeKeys[k])
				}
				if k == 1 {
					idUnsure = true
				}
				continue
			}
			seen |= 1 << k
			switch k {
			case 0:
				jsonrpcVal = val
			case 1:
				f.id, f.idAt = val, at
			case 2:
				method = val
			case 3:
				f.params = val
			case 4:
				f.result = val
			case 5:
				f.errVal = val
			}
		}
	}

	idOK := f.id != nil && (f.id[0] == '"' || f.id[0] == '-' || (f.id[0] >= '0' && f.id[0] <= '9'))
	if idOK && !idUnsure {
		f.badID = f.id
	}
	if keyProblem != "" {
		return invalid("%s", keyProblem)
	}
	if deep > maxFrameDepth {
		return invalid("the message nests deeper than %d levels", maxFrameDepth)
	}
	if string(jsonrpcVal) != `"2.0"` {
		if method == nil && (f.result != nil || f.errVal != nil) {
			return dropped(f, `a response without "jsonrpc":"2.0"`)
		}
		return invalid(`the message needs "jsonrpc":"2.0"`)
	}
	if method == nil {
		if f.result == nil && f.errVal == nil {
			return invalid(`a message needs "method" (a request or notification) or "result" or "error" (a response)`)
		}
		return checkResponse(f)
	}
	if method[0] != '"' {
		return invalid(`"method" must be a string`)
	}
	if bytes.IndexByte(method, '\\') < 0 {
		f.method = string(method[1 : len(method)-1])
	} else if err := json.Unmarshal(method, &f.method); err != nil {
		return invalid(`"method": %v`, err)
	}
	if f.params != nil && f.params[0] != '{' && f.params[0] != '[' && string(f.params) != "null" {
		return invalid(`"params" must be an object`)
	}
	if f.id == nil {
		f.kind = frameNotification
		return f
	}
	if !idOK {
		return invalid(`"id" must be a string or an integer`)
	}
	f.kind = frameRequest
	return f
}

// checkResponse finishes a frame without a method: a response from the
// client to one of the SDK's requests. The SDK's ids are integers; a response
// with any id the SDK would read differently than it is written, or with
// parts the SDK cannot decode, is dropped (a response is never answered).
func checkResponse(f frame) frame {
	if f.id == nil || (f.id[0] != '"' && !exactInt64(f.id)) || (f.id[0] == '"' && bytes.IndexByte(f.id, '\\') >= 0) {
		return dropped(f, "a response whose id was never sent")
	}
	if f.result != nil && f.errVal != nil {
		return dropped(f, `a response with both "result" and "error"`)
	}
	if _, err := jsonrpc.DecodeMessage(f.msg); err != nil {
		return dropped(f, "a response that cannot be decoded: "+err.Error())
	}
	f.kind, f.bad = frameResponse, nil
	return f
}

func dropped(f frame, why string) frame {
	f.kind, f.bad, f.why = frameBad, nil, why
	return f
}

// envelopeKey returns the index in envelopeKeys of the member key (the raw
// bytes between the quotes) if it equals one of them ignoring case or
// escapes, otherwise -1.
func envelopeKey(key []byte) int {
	if len(key) > 2*len("jsonrpc")*6 { // longer than any escaped spelling
		return -1
	}
	if bytes.IndexByte(key, '\\') < 0 { // as nearly every message has it: no copy
		for i, k := range envelopeKeys {
			if bytes.EqualFold(key, []byte(k)) {
				return i
			}
		}
		return -1
	}
	s := string(key)
	if err := json.Unmarshal([]byte(`"`+s+`"`), &s); err != nil {
		return -1
	}
	for i, k := range envelopeKeys {
		if strings.EqualFold(s, k) {
			return i
		}
	}
	return -1
}

// exactInt64 reports whether raw, a JSON number, is an integer the SDK reads
// back and writes out with the same digits: no fraction, no exponent, no
// "-0", within int64.
func exactInt64(raw []byte) bool {
	if string(raw) == "-0" {
		return false
	}
	_, err := strconv.ParseInt(string(raw), 10, 64)
	return err == nil
}

// depth returns the deepest nesting of objects and arrays in msg, which must
// be valid JSON.
func depth(msg []byte) int {
	d, deepest := 0, 0
	for i := 0; i < len(msg); i++ {
		switch msg[i] {
		case '"':
			i = jsonscan.SkipString(msg, i) - 1
		case '{', '[':
			d++
			deepest = max(deepest, d)
		case '}', ']':
			d--
		}
	}
	return deepest
}
