package catalog

import (
	"bytes"
	"encoding/base64"
	"encoding/gob"
	"encoding/json"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BindsHeader reports whether a decoded JSON schema mentions x-mcp-header
// anywhere (a key of any object in it).
func BindsHeader(schema any) bool {
	switch v := schema.(type) {
	case map[string]any:
		for k, x := range v {
			if k == "x-mcp-header" || BindsHeader(x) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if BindsHeader(x) {
				return true
			}
		}
	}
	return false
}

// listedTools returns the names of the tools c lists, sorted, as the SDK
// pages them.
func (c *Snapshot) listedTools() []string {
	c.listOnce.Do(func() {
		names := make([]string, 0, len(c.ToolDefs))
		for name := range c.ToolDefs {
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

// ToolPage is the page of c's tools/list after cursor, of the SDK's page
// size, paged as the SDK pages (by name; the cursor names the last tool of
// the page before). An undecodable cursor is the SDK's invalid params.
func (c *Snapshot) ToolPage(cursor string) (*mcp.ListToolsResult, error) {
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
		res.Tools = append(res.Tools, c.ToolDefs[name])
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

// HeaderBound reports whether the input schema of the exposed tool name
// binds a parameter to a header (x-mcp-header): the SDK checks such a
// call's Mcp-Param-* headers against its arguments, so the lean path leaves
// it to the SDK. The schemas are read once per catalog, and any mention of
// the keyword counts.
func (c *Snapshot) HeaderBound(name string) bool {
	c.headerOnce.Do(func() {
		for exposed, def := range c.ToolDefs {
			if def == nil || def.InputSchema == nil {
				continue
			}
			b, err := json.Marshal(def.InputSchema)
			if err != nil || bytes.Contains(b, []byte("x-mcp-header")) {
				if c.headerTools == nil {
					c.headerTools = make(map[string]bool)
				}
				c.headerTools[exposed] = true
			}
		}
	})
	return c.headerTools[name]
}
