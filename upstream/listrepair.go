package upstream

// This file makes the listings of a server tolerant per item. The SDK
// decodes a list result as a whole, so one malformed item (a tool with
// "annotations":"x") would fail the whole page and take every tool of the
// server away. Every connection to a server is wrapped so that the response
// to a list request has the items that do not decode left out, each logged
// with the server's name and the item's, before the SDK decodes it.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listMembers maps each list method to the member of its result that holds
// the items.
var listMembers = map[string]string{
	"tools/list":               "tools",
	"prompts/list":             "prompts",
	"resources/list":           "resources",
	"resources/templates/list": "resourceTemplates",
}

// decodeItem decodes one item of the list of method as the SDK would.
func decodeItem(method string, item json.RawMessage) error {
	var v any
	switch method {
	case "tools/list":
		v = new(mcp.Tool)
	case "prompts/list":
		v = new(mcp.Prompt)
	case "resources/list":
		v = new(mcp.Resource)
	default:
		v = new(mcp.ResourceTemplate)
	}
	return json.Unmarshal(item, v)
}

// Reasons for leaving out an item that encoding/json decodes but the SDK
// would not.
var (
	errNullItem = jsonError("the item is null, not an object")
	errTooDeep  = jsonError("the item nests too deep")
)

// maxItemDepth is the deepest nesting of an item that the SDK's decoder
// accepts (1000 levels for the whole message) with room for the envelope.
const maxItemDepth = 990

// nesting returns the deepest nesting of objects and arrays in b.
func nesting(b []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

type jsonError string

func (e jsonError) Error() string { return string(e) }

// repairList returns the raw result of a request for method with every item
// of its list that does not decode (or is null) left out, and reports each
// one to drop with its name (or URI) when it has one. It returns result
// itself when nothing is left out, or when the result is not an object with
// an array where the list belongs (the SDK then reports the whole result as
// malformed).
func repairList(method string, result json.RawMessage, drop func(method, item string, err error)) json.RawMessage {
	key, ok := listMembers[method]
	if !ok || len(result) == 0 {
		return result
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(result, &members) != nil {
		return result
	}
	if decodesWhole(method, members[key]) {
		return result
	}
	var items []json.RawMessage
	if json.Unmarshal(members[key], &items) != nil {
		return result
	}
	kept := make([]json.RawMessage, 0, len(items))
	for _, it := range items {
		err := decodeItem(method, it)
		switch {
		case err != nil:
		case bytes.Equal(bytes.TrimSpace(it), []byte("null")):
			err = errNullItem
		case nesting(it) > maxItemDepth:
			err = errTooDeep
		}
		if err != nil {
			drop(method, itemName(it), err)
			continue
		}
		kept = append(kept, it)
	}
	if len(kept) == len(items) {
		return result
	}
	var err error
	if members[key], err = json.Marshal(kept); err != nil {
		return result
	}
	out, err := json.Marshal(members)
	if err != nil {
		return result
	}
	return out
}

// decodesWhole reports whether list, the list of a list result, decodes as
// a whole into the SDK's items with none null and none nested too deep:
// then each item decodes alone too (encoding/json reports an item's error
// at the end of the array, not at the item), and repairList has nothing to
// leave out. One decoding of the array is most of the cost of splitting it
// and decoding each item: a thousand tools are listed at every start.
func decodesWhole(method string, list json.RawMessage) bool {
	var ok bool
	switch method {
	case "tools/list":
		ok = decodesAll[mcp.Tool](list)
	case "prompts/list":
		ok = decodesAll[mcp.Prompt](list)
	case "resources/list":
		ok = decodesAll[mcp.Resource](list)
	default:
		ok = decodesAll[mcp.ResourceTemplate](list)
	}
	// An array nests one deeper than its deepest item.
	return ok && nesting(list) <= maxItemDepth+1
}

// decodesAll reports whether list decodes as an array of T with no null.
func decodesAll[T any](list json.RawMessage) bool {
	var v []*T
	if json.Unmarshal(list, &v) != nil {
		return false
	}
	return !slices.Contains(v, nil)
}

// itemName returns what names a list item: its URI, URI template or name,
// cut to 200 bytes, or "" when it has none that is a string.
func itemName(item json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(item, &m) != nil {
		return ""
	}
	for _, k := range []string{"uri", "uriTemplate", "name"} {
		var s string
		if json.Unmarshal(m[k], &s) == nil && s != "" {
			if len(s) > 200 {
				s = strings.ToValidUTF8(s[:200], "") + "…"
			}
			return s
		}
	}
	return ""
}

// dropItem logs a list item left out by repairList.
func (u *Upstream) dropItem(method, item string, err error) {
	u.log.Warn("a listed item is malformed; it is left out and the rest of the list is served. Tell the server's maintainers",
		"list", method, "item", item, "err", err)
}

// repairTransport wraps the connections of a transport in repairConn.
type repairTransport struct {
	mcp.Transport
	u *Upstream
}

func (t repairTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &repairConn{Connection: c, u: t.u, lists: make(map[jsonrpc.ID]string)}, nil
}

// repairConn remembers the list requests it writes and repairs their
// responses as it reads them. Only for connections without the SDK's
// optional client-connection hooks (stdio and in-memory ones); a remote
// server's responses are repaired on the HTTP side (repairBody).
type repairConn struct {
	mcp.Connection
	u *Upstream

	mu    sync.Mutex
	lists map[jsonrpc.ID]string // guarded by mu; list requests awaiting a response, by id
}

func (c *repairConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.ID.IsValid() {
		if _, list := listMembers[req.Method]; list {
			c.mu.Lock()
			c.lists[req.ID] = req.Method
			c.mu.Unlock()
		}
	}
	return c.Connection.Write(ctx, msg)
}

func (c *repairConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil {
		c.mu.Lock()
		method, list := c.lists[resp.ID]
		delete(c.lists, resp.ID)
		c.mu.Unlock()
		if list && resp.Error == nil {
			resp.Result = repairList(method, resp.Result, c.u.dropItem)
		}
	}
	return msg, err
}

// listMethodOf returns the list method of an HTTP request that posts one
// JSON-RPC list request, or "".
func listMethodOf(req *http.Request) string {
	if req.Method != http.MethodPost || req.GetBody == nil {
		return ""
	}
	body, err := req.GetBody()
	if err != nil {
		return ""
	}
	defer body.Close()
	b, err := io.ReadAll(io.LimitReader(body, 1<<20))
	if err != nil {
		return ""
	}
	msg, err := jsonrpc.DecodeMessage(b)
	if err != nil {
		return ""
	}
	if r, ok := msg.(*jsonrpc.Request); ok && r.ID.IsValid() {
		if _, list := listMembers[r.Method]; list {
			return r.Method
		}
	}
	return ""
}

// repairBody wraps the body of the response to a posted list request so
// that its response message, as JSON or as SSE data lines, is repaired.
// Lines longer than max pass through unchanged (the SDK bounds them).
func (u *Upstream) repairBody(method string, resp *http.Response, max int) {
	ct := resp.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "application/json"):
		b, err := io.ReadAll(io.LimitReader(resp.Body, int64(max)+1))
		if err != nil || len(b) > max {
			resp.Body = readCloser{io.MultiReader(bytes.NewReader(b), resp.Body), resp.Body}
			return
		}
		b = u.repairFrame(method, b)
		resp.Body = readCloser{bytes.NewReader(b), resp.Body}
		resp.ContentLength = int64(len(b))
		resp.Header.Del("Content-Length")
	case strings.HasPrefix(ct, "text/event-stream"):
		resp.Body = &sseRepair{u: u, method: method, r: bufio.NewReaderSize(resp.Body, 64<<10), body: resp.Body, max: max}
	}
}

// repairFrame repairs one encoded JSON-RPC response to a list request.
func (u *Upstream) repairFrame(method string, frame []byte) []byte {
	msg, err := jsonrpc.DecodeMessage(bytes.TrimSpace(frame))
	if err != nil {
		return frame
	}
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.Error != nil {
		return frame
	}
	fixed := repairList(method, resp.Result, u.dropItem)
	if len(fixed) == len(resp.Result) && bytes.Equal(fixed, resp.Result) {
		return frame
	}
	resp.Result = fixed
	out, err := jsonrpc.EncodeMessage(resp)
	if err != nil {
		return frame
	}
	return out
}

type readCloser struct {
	io.Reader
	io.Closer
}

// sseRepair repairs the data lines of an SSE stream line by line.
type sseRepair struct {
	u      *Upstream
	method string
	r      *bufio.Reader
	body   io.Closer
	max    int
	line   []byte // the line being assembled
	long   bool   // inside a line longer than max: passed through
	out    []byte // repaired bytes not yet read
}

func (s *sseRepair) Read(p []byte) (int, error) {
	for len(s.out) == 0 {
		chunk, err := s.r.ReadSlice('\n')
		switch {
		case s.long || len(s.line)+len(chunk) > s.max:
			s.out = append(s.out, s.line...)
			s.out = append(s.out, chunk...)
			s.line = s.line[:0]
			s.long = err == bufio.ErrBufferFull
		case err == bufio.ErrBufferFull:
			s.line = append(s.line, chunk...)
		default:
			line := append(s.line, chunk...)
			s.line = s.line[:0]
			if data, ok := bytes.CutPrefix(line, []byte("data:")); ok && len(chunk) > 0 && chunk[len(chunk)-1] == '\n' {
				fixed := s.u.repairFrame(s.method, data)
				if !bytes.Equal(fixed, data) {
					line = append(append([]byte("data: "), fixed...), '\n')
				}
			}
			s.out = append(s.out, line...)
		}
		if err != nil && err != bufio.ErrBufferFull {
			if len(s.out) > 0 {
				break
			}
			return 0, err
		}
	}
	n := copy(p, s.out)
	s.out = s.out[n:]
	return n, nil
}

func (s *sseRepair) Close() error { return s.body.Close() }
