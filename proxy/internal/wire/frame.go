package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

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

// Kind says what a checked line is.
type Kind int

const (
	Request      Kind = iota // method and id
	Notification             // method, no id
	Response                 // result or error, id
	Bad                      // answered with Frame.Bad, or dropped
)

// Frame is one checked downstream line.
type Frame struct {
	Kind Kind
	// Msg is the line without surrounding whitespace.
	Msg []byte
	// Method is the decoded method of a request or notification.
	Method string
	// ID, Params, Result and ErrVal are the raw top-level values; nil when
	// absent. They are slices of Msg.
	ID, Params, Result, ErrVal []byte
	// IDAt is the offset of ID in Msg.
	IDAt int
	// Bad is set for a Bad frame: the error to answer with, or nil to drop
	// the line (a malformed response, which is never answered).
	Bad *Error
	// BadID is the id to answer a bad line with: the frame's id if it was a
	// valid one, otherwise null.
	BadID json.RawMessage
	// Why says, for a dropped line, what was wrong with it.
	Why string
}

// Error is the JSON-RPC error that answers a bad line.
type Error struct {
	Code    int64
	Message string
}

// The JSON-RPC error codes of a bad line.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
)

// NullID is the id of an answer to a line whose id is unknown.
var NullID = json.RawMessage("null")

// members the JSON-RPC envelope is made of; a case variant of any of them is
// refused, since Go decoders disagree on whether it counts.
var envelopeKeys = [...]string{"jsonrpc", "id", "method", "params", "result", "error"}

// Check classifies one line read from the downstream client. It never
// fails: a line that is not a usable JSON-RPC message comes back as Bad.
// A response is checked as far as the bytes go; whether the SDK decodes it
// is its caller's to check (Frame.Drop).
func Check(line []byte) Frame {
	msg := bytes.TrimSpace(line)
	f := Frame{Kind: Bad, Msg: msg, BadID: NullID}
	deep, bad := checkValue(msg)
	if bad != nil {
		f.Bad = bad
		return f
	}
	env := readEnvelope(&f)
	if env.idOK && !env.idUnsure {
		f.BadID = f.ID
	}
	if env.keyProblem != "" {
		return f.invalid("%s", env.keyProblem)
	}
	if deep > maxFrameDepth {
		return f.invalid("the message nests deeper than %d levels", maxFrameDepth)
	}
	if string(env.jsonrpc) != `"2.0"` {
		if env.method == nil && (f.Result != nil || f.ErrVal != nil) {
			return f.Drop(`a response without "jsonrpc":"2.0"`)
		}
		return f.invalid(`the message needs "jsonrpc":"2.0"`)
	}
	if env.method == nil {
		if f.Result == nil && f.ErrVal == nil {
			return f.invalid(`a message needs "method" (a request or notification) or "result" or "error" (a response)`)
		}
		return checkResponse(f)
	}
	return checkRequest(f, env)
}

// checkValue checks that msg is one JSON object, not too deep to scan, and
// returns its depth, or the error that answers it.
func checkValue(msg []byte) (int, *Error) {
	if !utf8.Valid(msg) {
		return 0, parseErr("the line is not valid UTF-8; send one JSON-RPC message per line, UTF-8 encoded")
	}
	// jsonscan.Valid, as encoding/json, refuses JSON nested deeper than
	// jsonscan.MaxDepth levels.
	deep := depth(msg)
	if deep > jsonscan.MaxDepth {
		return 0, invalid("the message nests deeper than %d levels", maxFrameDepth)
	}
	if !jsonscan.Valid(msg) {
		if bytes.HasPrefix(msg, []byte("\uFEFF")) {
			return 0, parseErr("the line starts with a byte order mark; send JSON without a BOM")
		}
		return 0, parseErr("the line is not one JSON value; send one JSON-RPC message per line")
	}
	if msg[0] != '{' {
		if msg[0] == '[' {
			return 0, invalid("JSON-RPC batches are not part of MCP 2025-06-18 and later; send one message per line")
		}
		return 0, invalid("a message must be a JSON object")
	}
	return deep, nil
}

// envelope is what readEnvelope found besides the members it set on the
// frame.
type envelope struct {
	jsonrpc, method []byte
	keyProblem      string // the first duplicate or variant envelope key
	idUnsure        bool   // "id" was repeated or spelled oddly
	idOK            bool   // "id" is a string or a number
}

// readEnvelope reads the top-level members of f.Msg, a valid JSON object,
// setting f's ID, IDAt, Params, Result and ErrVal.
func readEnvelope(f *Frame) envelope {
	msg := f.Msg
	var env envelope
	seen := 0 // bit i: envelopeKeys[i] was present
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
				if env.keyProblem == "" {
					env.keyProblem = fmt.Sprintf("member %s must be spelled %q (lower case, no escapes)", strconv.Quote(string(key)), envelopeKeys[k])
				}
				if k == 1 {
					env.idUnsure = true
				}
				continue
			case seen&(1<<k) != 0:
				if env.keyProblem == "" {
					env.keyProblem = fmt.Sprintf("member %q appears twice", envelopeKeys[k])
				}
				if k == 1 {
					env.idUnsure = true
				}
				continue
			}
			seen |= 1 << k
			switch k {
			case 0:
				env.jsonrpc = val
			case 1:
				f.ID, f.IDAt = val, at
			case 2:
				env.method = val
			case 3:
				f.Params = val
			case 4:
				f.Result = val
			case 5:
				f.ErrVal = val
			}
		}
	}
	env.idOK = f.ID != nil && (f.ID[0] == '"' || f.ID[0] == '-' || (f.ID[0] >= '0' && f.ID[0] <= '9'))
	return env
}

// checkRequest finishes a frame with a method: a request or a
// notification.
func checkRequest(f Frame, env envelope) Frame {
	method := env.method
	if method[0] != '"' {
		return f.invalid(`"method" must be a string`)
	}
	if bytes.IndexByte(method, '\\') < 0 {
		f.Method = string(method[1 : len(method)-1])
	} else if err := json.Unmarshal(method, &f.Method); err != nil {
		return f.invalid(`"method": %v`, err)
	}
	if f.Params != nil && f.Params[0] != '{' && f.Params[0] != '[' && string(f.Params) != "null" {
		return f.invalid(`"params" must be an object`)
	}
	if f.ID == nil {
		f.Kind = Notification
		return f
	}
	if !env.idOK {
		return f.invalid(`"id" must be a string or an integer`)
	}
	f.Kind = Request
	return f
}

func parseErr(format string, args ...any) *Error {
	return &Error{Code: CodeParseError, Message: "parse error: " + fmt.Sprintf(format, args...)}
}

func invalid(format string, args ...any) *Error {
	return &Error{Code: CodeInvalidRequest, Message: "invalid request: " + fmt.Sprintf(format, args...)}
}

// invalid returns f as a bad frame answered with an invalid request error.
func (f Frame) invalid(format string, args ...any) Frame {
	f.Kind, f.Bad = Bad, invalid(format, args...)
	return f
}

// checkResponse finishes a frame without a method: a response from the
// client to one of the SDK's requests. The SDK's ids are integers; a response
// with any id the SDK would read differently than it is written is dropped
// (a response is never answered). Whether the SDK can decode its parts is
// the caller's to check.
func checkResponse(f Frame) Frame {
	if f.ID == nil || (f.ID[0] != '"' && !ExactInt64(f.ID)) || (f.ID[0] == '"' && bytes.IndexByte(f.ID, '\\') >= 0) {
		return f.Drop("a response whose id was never sent")
	}
	if f.Result != nil && f.ErrVal != nil {
		return f.Drop(`a response with both "result" and "error"`)
	}
	f.Kind, f.Bad = Response, nil
	return f
}

// Drop returns f as a line dropped for why: a bad frame answered with
// nothing.
func (f Frame) Drop(why string) Frame {
	f.Kind, f.Bad, f.Why = Bad, nil, why
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

// ExactInt64 reports whether raw, a JSON number, is an integer the SDK reads
// back and writes out with the same digits: no fraction, no exponent, no
// "-0", and within ±2^53, since the SDK reads an id through float64 (it
// answers 9007199254740993 as 9007199254740992, and the largest int64 as a
// negative number).
func ExactInt64(raw []byte) bool {
	if string(raw) == "-0" {
		return false
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return err == nil && n <= 1<<53 && n >= -(1<<53)
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
