package catalog

import (
	"encoding/json"
	"fmt"
	"github.com/manifold-mcp/manifold/proxy/internal/wire"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/proxy/naming"
)

// UnknownTool is the protocol error for a tool that does not exist for the
// caller: unknown and hidden tools get the same answer. It suggests visible
// tools that name could have meant (an original name without its server's
// prefix, another case, "-" for "_"), never a hidden one, and says how the
// names are formed.
func (c *Snapshot) UnknownTool(name string) *jsonrpc.Error {
	var b strings.Builder
	fmt.Fprintf(&b, "unknown tool %q", name)
	visible := slices.Sorted(maps.Keys(c.ToolDefs))
	var near []string
	for _, exposed := range visible {
		e, _ := c.Tools.Lookup(exposed)
		if e.Original == name || looseName(exposed) == looseName(name) || looseName(e.Original) == looseName(name) {
			near = append(near, strconv.Quote(exposed))
		}
	}
	if len(near) > 0 {
		fmt.Fprintf(&b, "; did you mean %s?", strings.Join(near[:min(len(near), 5)], " or "))
	}
	b.WriteString(". Tools are named <server>__<tool>")
	if len(visible) > 0 {
		fmt.Fprintf(&b, " (for example %q)", visible[0])
	}
	b.WriteString("; tools/list shows them")
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: b.String()}
}

// looseName folds case and "-" into "_", as clients do (Codex rewrites "-").
func looseName(s string) string {
	return strings.ReplaceAll(strings.ToLower(s), "-", "_")
}

// callTool forwards one tools/call for the exposed tool name. fields holds the
// downstream params other than "name" as raw JSON (arguments, _meta and

// FilterResultResources rewrites the resource URIs in a raw result (resource
// links and embedded resources) outward for server, and withholds those
// whose read the policy would refuse (see UpstreamResource). The
// lean path and the SDK path both come through here.
func (c *Snapshot) FilterResultResources(server string, raw json.RawMessage, who policy.Identity) json.RawMessage {
	if !c.FiltersResources(server) { // unprefixed and unguarded: URIs are kept
		return raw
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		if c.Rules.GuardsResources(server) {
			return wire.ToolError("the result of server %q could not be decoded to apply the resource policy, so it was withheld: %v", server, err)
		}
		return raw
	}
	if !naming.FilterContentResources(v, func(u string) (string, bool) { return c.UpstreamResource(server, u, who) }) {
		return raw
	}
	out, err := json.Marshal(v)
	if err != nil {
		if c.Rules.GuardsResources(server) {
			return wire.ToolError("the result of server %q could not be encoded after applying the resource policy, so it was withheld: %v", server, err)
		}
		return raw
	}
	return out
}

// handleCallTool is the typed tools/call handler the SDK registers for every
// exposed tool. The routing middleware answers tools/call first (serveCallTool,
