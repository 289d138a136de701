package catalog

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CatalogSize is what the tool list costs a client up front, in each mode:
// the bytes of the tools/list result's JSON, and tokens estimated from them
// (EstimateTokens).
type CatalogSize struct {
	Tools       int          `json:"tools"`        // visible tools
	FullBytes   int          `json:"full_bytes"`   // the full list
	SearchBytes int          `json:"search_bytes"` // the search surface's list
	Servers     []ServerSize `json:"servers"`      // per server, in config order
	// MetaBytes are the search tools' own share of SearchBytes.
	MetaBytes int `json:"meta_bytes"`
}

// ServerSize is one server's share of a CatalogSize: its tools' definitions
// in the full list, and its always tools in the search list.
type ServerSize struct {
	Server      string `json:"server"`
	Tools       int    `json:"tools"`
	FullBytes   int    `json:"full_bytes"`
	SearchBytes int    `json:"search_bytes"`
}

// EstimateTokens estimates the tokens of n bytes of JSON as n/4 (rounded
// up), the usual rule of thumb for English text and JSON with tokenizers of
// current models; a real count depends on the model.
func EstimateTokens(n int) int { return (n + 3) / 4 }

// Size measures c's tool lists as a client of the latest initialize-era
// version gets them: the full list, and the search surface's (list, whose
// meta-tools are meta); servers are the servers in config order.
func (c *Snapshot) Size(servers []string, list []*mcp.Tool, meta map[string]*mcp.Tool) CatalogSize {
	names := slices.Sorted(maps.Keys(c.ToolDefs))
	full := &mcp.ListToolsResult{Tools: make([]*mcp.Tool, 0, len(names))}
	per := map[string]*ServerSize{}
	var out CatalogSize
	for _, name := range servers {
		ss := &ServerSize{Server: name}
		per[name] = ss
	}
	for _, n := range names {
		def := c.ToolDefs[n]
		full.Tools = append(full.Tools, def)
		e, _ := c.Tools.Lookup(n)
		b, _ := json.Marshal(def)
		if ss := per[e.Server]; ss != nil {
			ss.Tools++
			ss.FullBytes += len(b) + 1 // and its comma
		}
	}
	fb, _ := json.Marshal(full)
	sb, _ := json.Marshal(&mcp.ListToolsResult{Tools: list})
	for _, def := range list {
		b, _ := json.Marshal(def)
		if meta[def.Name] == def {
			out.MetaBytes += len(b) + 1
			continue
		}
		if e, ok := c.Tools.Lookup(def.Name); ok && per[e.Server] != nil {
			per[e.Server].SearchBytes += len(b) + 1
		}
	}
	out.Tools, out.FullBytes, out.SearchBytes = len(names), len(fb), len(sb)
	for _, name := range servers {
		out.Servers = append(out.Servers, *per[name])
	}
	return out
}
