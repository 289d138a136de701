package surface

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/proxy/era"
	"github.com/manifold-mcp/manifold/proxy/internal/wire"
	"github.com/manifold-mcp/manifold/proxy/naming"
)

// This file answers the meta-tools of the search surface: search_tools and
// describe_tools over a catalog's visible tools, and the arguments of
// every meta-tool (a call tool's target and its arguments), and the lead
// of Manifold's instructions for a client's mode. Calling the
// target through the call pipeline is the root's (proxy/surface.go's
// callThrough).

// Catalog is what answering search_tools and describe_tools needs of the
// catalog in force beyond the State's own tools (proxy/catalog's Snapshot
// has it): whether the caller may see a tool, and how many hits to ask the
// index for so that hidden ones do not crowd out visible ones.
type Catalog interface {
	VisibleTool(name string, who policy.Identity) (naming.Entry, policy.Decision, bool)
	SearchDepth(limit int) int
}

// toolSummary is the first sentence of a description, on one line, at
// most 160 characters.
func toolSummary(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	for i := 0; i+1 < len(s); i++ {
		if (s[i] == '.' || s[i] == '!' || s[i] == '?') && s[i+1] == ' ' {
			s = s[:i+1]
			break
		}
	}
	if r := []rune(s); len(r) > 160 {
		s = string(r[:159]) + "…"
	}
	return s
}

// searchHit is one match of search_tools, in its structuredContent.
type searchHit struct {
	Name       string   `json:"name"`
	Signature  string   `json:"signature"`
	Summary    string   `json:"summary,omitempty"`
	Server     string   `json:"server"`
	Class      string   `json:"class"`
	CallWith   string   `json:"call_with"`
	Required   []string `json:"required,omitempty"`
	Parameters []string `json:"parameters,omitempty"`
}

// signature is a tool's compact signature: name(required*, optional?).
func signature(name string, ps []Param) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		if p.Required {
			parts[i] = p.Name + "*"
		} else {
			parts[i] = p.Name + "?"
		}
	}
	return name + "(" + strings.Join(parts, ", ") + ")"
}

// toolResult is a successful tool result with text and structured content.
func toolResult(text string, structured any) json.RawMessage {
	b, _ := json.Marshal(struct {
		Content           []mcp.TextContent `json:"content"`
		StructuredContent any               `json:"structuredContent,omitempty"`
	}{[]mcp.TextContent{{Text: text}}, structured})
	return b
}

// SearchTools answers search_tools with args for who: the visible tools
// of the catalog c (whose State is st) that match the query, best first.
func (st *State) SearchTools(c Catalog, ann map[string]*policy.Annotations, args map[string]json.RawMessage, who policy.Identity) json.RawMessage {
	var query string
	if err := json.Unmarshal(args["query"], &query); err != nil || strings.TrimSpace(query) == "" {
		return wire.ToolError("search_tools needs a query: the task in a few words, for example {\"query\": \"read a file\"}")
	}
	if len(query) > SearchMaxQueryLength {
		return wire.ToolError("the query is %d bytes long; describe the task in a few words (at most %d bytes)", len(query), SearchMaxQueryLength)
	}
	limit := SearchDefaultLimit
	if raw, ok := args["limit"]; ok && string(raw) != "null" {
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil || f < 1 || f != float64(int(f)) {
			return wire.ToolError("search_tools: limit must be a whole number from 1 to %d", SearchMaxLimit)
		}
		limit = min(int(f), SearchMaxLimit)
	}
	ix, ranker := st.SearchIndex()
	hits := ix.Search(query, c.SearchDepth(limit))
	out := struct {
		Query  string      `json:"query"`
		Tools  []searchHit `json:"tools"`
		Ranker string      `json:"ranker,omitempty"` // with [catalog] encoder only
	}{Query: query, Tools: []searchHit{}, Ranker: ranker}
	var b strings.Builder
	for _, h := range hits {
		def, ok := st.defs[h.ID]
		if !ok || len(out.Tools) == limit {
			continue // never a tool the catalog does not show
		}
		if _, _, visible := c.VisibleTool(h.ID, who); !visible {
			continue // nor one hidden for the caller
		}
		e, _ := st.tools.Lookup(h.ID)
		ps := SchemaParams(def.InputSchema)
		class := ToolClass(ann[h.ID])
		hit := searchHit{Name: h.ID, Signature: signature(h.ID, ps), Summary: toolSummary(def.Description), Server: e.Server,
			Class: class, CallWith: CallToolOf(class)}
		for _, p := range ps {
			if p.Required {
				hit.Required = append(hit.Required, p.Name)
			} else {
				hit.Parameters = append(hit.Parameters, p.Name)
			}
		}
		out.Tools = append(out.Tools, hit)
		b.WriteString(hit.Signature)
		if hit.Summary != "" {
			b.WriteString(" — " + hit.Summary)
		}
		fmt.Fprintf(&b, " [%s] → %s\n", class, hit.CallWith)
	}
	if len(out.Tools) == 0 {
		return toolResult(fmt.Sprintf("No tool matches %q. Rephrase with other words (what the tool would do, or the service it works on), or search for a smaller step of the task; if nothing fits, no server here offers it, so say so rather than guess.", query), out)
	}
	return toolResult(strings.TrimRight(b.String(), "\n"), out)
}

// DescribeTools answers describe_tools with args for who: the definitions
// of the named visible tools of the catalog c (whose State is st), as a
// client of version lists them (modern rewrites a modern client's list).
func (st *State) DescribeTools(c Catalog, ann map[string]*policy.Annotations, args map[string]json.RawMessage, version string, modern func(*mcp.ListToolsResult) *mcp.ListToolsResult, who policy.Identity) json.RawMessage {
	var names []string
	if err := json.Unmarshal(args["names"], &names); err != nil || len(names) == 0 {
		return wire.ToolError("describe_tools needs names: a list of 1 to %d tool names from search_tools, for example {\"names\": [\"files__read_text_file\"]}", DescribeMaxNames)
	}
	if len(names) > DescribeMaxNames {
		return wire.ToolError("describe_tools takes at most %d names at once; %d were given", DescribeMaxNames, len(names))
	}
	type described struct {
		Name     string    `json:"name"`
		Tool     *mcp.Tool `json:"tool,omitempty"`
		CallWith string    `json:"call_with,omitempty"`
		Error    string    `json:"error,omitempty"`
	}
	out := struct {
		Tools []described `json:"tools"`
	}{}
	var text []string
	for _, n := range names {
		def, ok := st.defs[n]
		if _, _, visible := c.VisibleTool(n, who); !visible {
			ok = false // hidden for the caller: unknown, as a call would say
		}
		if !ok {
			msg := fmt.Sprintf("unknown tool %q; search_tools finds the tools for a task", n)
			out.Tools = append(out.Tools, described{Name: n, Error: msg})
			text = append(text, msg)
			continue
		}
		lr := &mcp.ListToolsResult{Tools: []*mcp.Tool{def}}
		lr = era.ToolList(lr, version, modern)
		call := CallToolOf(ToolClass(ann[n]))
		out.Tools = append(out.Tools, described{Name: n, Tool: lr.Tools[0], CallWith: call})
		b, err := json.Marshal(lr.Tools[0])
		if err != nil {
			text = append(text, fmt.Sprintf("%s: its definition cannot be encoded: %v", n, err))
			continue
		}
		text = append(text, fmt.Sprintf("%s — call it with %s:\n%s", n, call, b))
	}
	return toolResult(strings.Join(text, "\n\n"), out)
}

// Arguments are the arguments of a meta-tool's call (fields' "arguments",
// nil when none), or the error result to answer when they are not an
// object.
func Arguments(name string, fields map[string]json.RawMessage) (map[string]json.RawMessage, json.RawMessage) {
	var args map[string]json.RawMessage
	if a := fields["arguments"]; len(a) > 0 && string(a) != "null" {
		if err := json.Unmarshal(a, &args); err != nil {
			return nil, wire.ToolError("%s: arguments must be an object: %v", name, err)
		}
	}
	return args, nil
}

// CallTarget is the tool that the call tool via is asked to run with args
// (call_tool_read, _write and _destructive) and the arguments to run it
// with (raw, empty or null when none), or the error result to answer when
// either is amiss.
func CallTarget(via string, args map[string]json.RawMessage) (target string, inner, bad json.RawMessage) {
	if err := json.Unmarshal(args["name"], &target); err != nil || target == "" {
		return "", nil, wire.ToolError("%s needs the name of the tool to call, as search_tools gave it, and its arguments: {\"name\": \"…\", \"arguments\": {…}}", via)
	}
	inner = args["arguments"]
	if len(inner) > 0 && string(inner) != "null" {
		var obj map[string]json.RawMessage
		if json.Unmarshal(inner, &obj) != nil {
			return "", nil, wire.ToolError("%s: the arguments of %q must be an object", via, target)
		}
	}
	return target, inner, nil
}

// WrongCallTool is the answer when the call tool via is asked to run
// target, a tool of another class.
func WrongCallTool(target, class, via string) json.RawMessage {
	return wire.ToolError("%q is a %s tool, so %s does not run it (each call tool runs one kind, so that your client can approve reads, changes and deletions apart); call it with %s. Nothing was executed.",
		target, class, via, CallToolOf(class))
}

// InnerFields are the params of the call that a call tool makes: those of
// its own call (fields) but its arguments, and the target's arguments
// (inner) when there are some.
func InnerFields(fields map[string]json.RawMessage, inner json.RawMessage) map[string]json.RawMessage {
	innerFields := make(map[string]json.RawMessage, len(fields))
	for k, v := range fields {
		if k != "arguments" {
			innerFields[k] = v
		}
	}
	if len(inner) > 0 && string(inner) != "null" {
		innerFields["arguments"] = inner
	}
	return innerFields
}

// UnknownTarget is the answer when a call tool's target is unknown or
// hidden for the caller (msg is the call's error): the call tool's
// argument gone wrong, a result the model can act on.
func UnknownTarget(msg string) json.RawMessage {
	return wire.ToolError("%s; search_tools finds the tools for a task", msg)
}

// SummaryLead opens the summary of a session in full mode.
const SummaryLead = "This one entry serves the tools of several servers. What each is for, and how its tools are named:"

// SearchLead opens the instructions of a session in search mode.
const SearchLead = "This one entry serves the tools of several servers behind a search: find the tool for a task with search_tools, then call it with the call tool it names (call_tool_read, call_tool_write or call_tool_destructive). The servers, and how their tools are named:"

// LeadFor is the lead of the instructions for a client about to list: the
// search one when it would get the search surface (the mode is decided at
// its first list; this is what that list would be now).
func (c *State) LeadFor(client string) string {
	if c.ModeFor(client) == ModeSearch {
		return SearchLead
	}
	return SummaryLead
}
