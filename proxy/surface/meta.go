package surface

import (
	"fmt"
	"github.com/manifold-mcp/manifold/proxy/internal/wire"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/policy"
)

// metaToolDefs are the meta-tools' definitions for a catalog of n visible
// tools from servers.
func metaToolDefs(n int, servers []string) []*mcp.Tool {
	from := strings.Join(servers, ", ")
	if len(servers) > 12 {
		from = strings.Join(servers[:12], ", ") + fmt.Sprintf(" and %d more", len(servers)-12)
	}
	if from == "" {
		from = "none yet"
	}
	t, f := true, false
	callSchema := func(kind string) map[string]any {
		return map[string]any{
			"type": "object",
			"properties": map[string]any{
				"name":      map[string]any{"type": "string", "description": "the tool's name, as search_tools gave it (a " + kind + " tool)"},
				"arguments": map[string]any{"type": "object", "description": "the tool's arguments, as its parameters say (describe_tools gives them in full)"},
			},
			"required": []any{"name"},
		}
	}
	return []*mcp.Tool{
		{
			Name:  ToolSearch,
			Title: "Search tools",
			Description: fmt.Sprintf("Find the tool for a task among %d tools from the servers %s. Describe the task in a few words "+
				"(\"read a file\", \"open a pull request\"); each match comes back as name(parameters, * = required) — what it does [read|write|destructive] → the call tool to use. "+
				"Then call it with that call tool (call_tool_read, call_tool_write or call_tool_destructive), giving its name and arguments; use describe_tools first when you need its parameters in full.", n, from),
			InputSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"query": map[string]any{"type": "string", "description": "the task, in a few words"},
					"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": SearchMaxLimit, "description": fmt.Sprintf("how many tools to return at most (default %d)", SearchDefaultLimit)},
				},
				"required": []any{"query"},
			},
			Annotations: &mcp.ToolAnnotations{Title: "Search tools", ReadOnlyHint: true, DestructiveHint: &f, IdempotentHint: true, OpenWorldHint: &f},
		},
		{
			Name:        ToolDescribe,
			Title:       "Describe tools",
			Description: "Give the full definitions (parameters, output, annotations) of up to 5 tools that search_tools found, by name. Call them with the call tool search_tools named.",
			InputSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"names": map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "minItems": 1, "maxItems": DescribeMaxNames, "description": "tool names, as search_tools gave them"},
				},
				"required": []any{"names"},
			},
			Annotations: &mcp.ToolAnnotations{Title: "Describe tools", ReadOnlyHint: true, DestructiveHint: &f, IdempotentHint: true, OpenWorldHint: &f},
		},
		{
			Name:        ToolCallRead,
			Title:       "Call a read-only tool",
			Description: "Call a read-only tool that search_tools marked [read]: it only reads and changes nothing. Give its name and its arguments.",
			InputSchema: callSchema("read"),
			Annotations: &mcp.ToolAnnotations{Title: "Call a read-only tool", ReadOnlyHint: true, DestructiveHint: &f, OpenWorldHint: &t},
		},
		{
			Name:        ToolCallWrite,
			Title:       "Call a tool that changes something",
			Description: "Call a tool that search_tools marked [write]: it creates or changes something but deletes or overwrites nothing. Give its name and its arguments.",
			InputSchema: callSchema("write"),
			Annotations: &mcp.ToolAnnotations{Title: "Call a tool that changes something", ReadOnlyHint: false, DestructiveHint: &f, OpenWorldHint: &t},
		},
		{
			Name:        ToolCallDestructive,
			Title:       "Call a destructive tool",
			Description: "Call a tool that search_tools marked [destructive]: it may delete or overwrite (tools that say nothing of what they do count here). Give its name and its arguments.",
			InputSchema: callSchema("destructive"),
			Annotations: &mcp.ToolAnnotations{Title: "Call a destructive tool", ReadOnlyHint: false, DestructiveHint: &t, OpenWorldHint: &t},
		},
	}
}

// Annotation classes of a tool, for the call tools.
const (
	ClassRead        = "read"
	ClassWrite       = "write"
	ClassDestructive = "destructive"
)

// ToolClass is the class of a tool by its effective annotations (after the
// operator's overrides): read-only, else destructive when it says so or
// says nothing (the protocol's default), else write.
func ToolClass(a *policy.Annotations) string {
	switch {
	case a.ReadOnlyHint():
		return ClassRead
	case a == nil || a.Destructive == nil || *a.Destructive:
		return ClassDestructive
	default:
		return ClassWrite
	}
}

// CallToolOf is the call tool of a class.
func CallToolOf(class string) string {
	switch class {
	case ClassRead:
		return ToolCallRead
	case ClassWrite:
		return ToolCallWrite
	}
	return ToolCallDestructive
}

// ClassOfCallTool is the class a call tool runs.
var ClassOfCallTool = map[string]string{ToolCallRead: ClassRead, ToolCallWrite: ClassWrite, ToolCallDestructive: ClassDestructive}

// Param is one top-level parameter of an input schema.
type Param struct {
	Name, Description string
	Required          bool
}

// SchemaParams lists the top-level parameters of an input schema: the
// required ones in the schema's order, then the others by name.
func SchemaParams(schema any) []Param {
	m, ok := schema.(map[string]any)
	if !ok {
		var err error
		if m, err = wire.Object(schema); err != nil {
			return nil
		}
	}
	props, _ := m["properties"].(map[string]any)
	req := map[string]bool{}
	var out []Param
	if rs, ok := m["required"].([]any); ok {
		for _, r := range rs {
			if n, ok := r.(string); ok && props[n] != nil && !req[n] {
				req[n] = true
				out = append(out, Param{Name: n, Required: true})
			}
		}
	} else if rs, ok := m["required"].([]string); ok {
		for _, n := range rs {
			if props[n] != nil && !req[n] {
				req[n] = true
				out = append(out, Param{Name: n, Required: true})
			}
		}
	}
	for _, n := range slices.Sorted(maps.Keys(props)) {
		if !req[n] {
			out = append(out, Param{Name: n})
		}
	}
	for i := range out {
		if p, ok := props[out[i].Name].(map[string]any); ok {
			out[i].Description, _ = p["description"].(string)
		}
	}
	return out
}
