package proxy

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/gob"
	"maps"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The catalog answers tools/list itself (ARCHITECTURE §3 "The hot path is
// lean"): its tools are not registered one by one with the SDK, whose
// AddTool encodes and decodes every input schema to check it, half of the
// proxy's start with a thousand tools, and whose list would only repeat
// what the catalog holds. Two kinds of tool still reach the SDK's registry:
//   - a tool whose input schema binds a parameter to a header
//     (x-mcp-header): the SDK's streamable handler checks such a call's
//     Mcp-Param-* headers against its registered schema, and rejects a
//     schema whose binding is malformed (that tool is then left out of the
//     lists, as before);
//   - beaconTool, registered again at every change of the listed tools, so
//     that the SDK schedules its tools/list_changed for every session, in
//     either era (a modern session's listen included), which
//     relay's ListChangedMiddleware then holds back or coalesces per session.
//
// tools/call never reaches the registry (routingMiddleware routes every
// call by the catalog), and neither does tools/list.

// beaconTool is the registered tool whose registration makes the SDK send
// tools/list_changed. Its name holds a ".", which no exposed name does.
const beaconTool = "manifold.list-changed"

var beaconDef = &mcp.Tool{Name: beaconTool, InputSchema: map[string]any{"type": "object"}}

// notifyToolsChanged makes the SDK send tools/list_changed to its sessions
// (after its short debounce).
func (s *Server) notifyToolsChanged() {
	s.server.AddTool(beaconDef, func(_ context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `unknown tool "` + beaconTool + `"`}
	})
}

// bindsHeader reports whether a decoded JSON schema mentions x-mcp-header
// anywhere (a key of any object in it).
func bindsHeader(schema any) bool {
	switch v := schema.(type) {
	case map[string]any:
		for k, x := range v {
			if k == "x-mcp-header" || bindsHeader(x) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if bindsHeader(x) {
				return true
			}
		}
	}
	return false
}

// checkHeaderTools leaves out of c's lists every tool whose header binding
// the SDK would refuse to register (the SDK's own check, on a scratch
// server that serves nothing), with the SDK's reason, which register logs.
// Called with catMu held, before c is stored.
func (s *Server) checkHeaderTools(c *catalog) {
	for _, name := range slices.Sorted(maps.Keys(c.toolDefs)) {
		def := c.toolDefs[name]
		if def == nil || !bindsHeader(def.InputSchema) {
			continue
		}
		if s.scratch == nil {
			s.scratch = mcp.NewServer(implementation(), nil)
		}
		err := catchPanic(func() { s.scratch.AddTool(def, nil) })
		s.scratch.RemoveTools(name)
		if err != nil {
			if c.unlisted == nil {
				c.unlisted = make(map[string]error)
			}
			c.unlisted[name] = err
		}
	}
}

// listedTools returns the names of the tools c lists, sorted, as the SDK
// pages them.
func (c *catalog) listedTools() []string {
	c.listOnce.Do(func() {
		names := make([]string, 0, len(c.toolDefs))
		for name := range c.toolDefs {
			if c.unlisted[name] == nil {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		c.listNames = names
	})
	return c.listNames
}

// pageToken is the SDK's cursor: the last name of the page before, gob
// encoded (a type of the same name and fields: gob matches by field name,
// so a cursor made by either reads in the other).
type pageToken struct {
	LastUID string
}

// toolPage is the page of c's tools/list after cursor, of the SDK's page
// size, paged as the SDK pages (by name; the cursor names the last tool of
// the page before). An undecodable cursor is the SDK's invalid params.
func (c *catalog) toolPage(cursor string) (*mcp.ListToolsResult, error) {
	names := c.listedTools()
	from := 0
	if cursor != "" {
		b, err := base64.URLEncoding.DecodeString(cursor)
		var tok pageToken
		if err == nil {
			err = gob.NewDecoder(bytes.NewReader(b)).Decode(&tok)
		}
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params"}
		}
		i, found := slices.BinarySearch(names, tok.LastUID)
		if found {
			i++
		}
		from = i
	}
	end := min(from+mcp.DefaultPageSize, len(names))
	res := &mcp.ListToolsResult{Tools: make([]*mcp.Tool, 0, end-from)}
	for _, name := range names[from:end] {
		res.Tools = append(res.Tools, c.toolDefs[name])
	}
	if end < len(names) {
		var buf bytes.Buffer
		if err := gob.NewEncoder(&buf).Encode(pageToken{LastUID: names[end-1]}); err != nil {
			return nil, err
		}
		res.NextCursor = base64.URLEncoding.EncodeToString(buf.Bytes())
	}
	return res, nil
}
