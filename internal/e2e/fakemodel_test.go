package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// A scripted model on loopback, for real client CLIs (Claude Code, Gemini
// CLI, Codex, opencode) run headless: it speaks the model APIs they use
// (Anthropic's Messages API, Google's Gemini API, OpenAI's Responses API and
// Chat Completions, fakemodel_openai_test.go), records what every request offered
// and sent back, and answers by a script: the first request that offers one
// of the planned tools gets a call of every planned tool the request
// offers (one turn, several calls); a request that carries tool results
// gets a final text; anything else (titles, classifiers, token counts)
// gets a short text.

// plannedCall is one tool call the scripted model makes: tool is the name
// Manifold exposes (such as "fs__read_text_file"); the client may prefix it
// (Claude Code's mcp__<server>__, Gemini CLI's own), so an offered tool
// matches when its name ends with tool.
type plannedCall struct {
	tool string
	args map[string]any
}

// modelRequest is what the fake model recorded of one request.
type modelRequest struct {
	api     string            // "anthropic" or "gemini"
	path    string            // the URL path
	tools   []string          // the names of the tools offered
	results map[string]string // tool results sent back: call id (Anthropic) or function name (Gemini) -> their text
	planned bool              // answered with the planned calls
}

// fakeModel is the scripted model. Its handler serves both APIs.
type fakeModel struct {
	plan []plannedCall

	mu     sync.Mutex
	reqs   []modelRequest    // guarded by mu
	called bool              // guarded by mu: the planned calls were made
	calls  map[string]string // guarded by mu: call id (or function name) -> planned tool, as sent
}

func newFakeModel(plan []plannedCall) *fakeModel {
	return &fakeModel{plan: plan, calls: map[string]string{}}
}

// requests returns a copy of the recorded requests, in order.
func (m *fakeModel) requests() []modelRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.reqs)
}

// sentCalls returns the planned calls as sent: call id (or function name)
// -> Manifold's tool name.
func (m *fakeModel) sentCalls() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]string, len(m.calls))
	for k, v := range m.calls {
		out[k] = v
	}
	return out
}

// offered returns the name of the offered tool that plan entry tool
// matches, or "".
func offered(tools []string, tool string) string {
	for _, n := range tools {
		if n == tool || strings.HasSuffix(n, "_"+tool) {
			return n
		}
	}
	return ""
}

// toCall decides, under mu, whether req gets the planned calls, and
// returns them as (offered name, args) pairs; it records req.
func (m *fakeModel) decide(req modelRequest) (calls []plannedCall) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.called && len(req.results) == 0 {
		for _, p := range m.plan {
			if n := offered(req.tools, p.tool); n != "" {
				calls = append(calls, plannedCall{tool: n, args: p.args})
			}
		}
		if len(calls) > 0 {
			m.called, req.planned = true, true
		}
	}
	m.reqs = append(m.reqs, req)
	return calls
}

// remember records that call id (or function name) id calls planned tool
// name (the offered name is mapped back to the plan's).
func (m *fakeModel) remember(id, offeredName string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.plan {
		if offeredName == p.tool || strings.HasSuffix(offeredName, "_"+p.tool) {
			m.calls[id] = p.tool
			return
		}
	}
}

// finalText is the model's last answer, once the tool results are in.
const finalText = "All tools answered."

func (m *fakeModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/messages/count_tokens"):
		writeJSON(w, map[string]any{"input_tokens": 100})
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/messages"):
		m.anthropic(w, body)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/responses"):
		m.responses(w, body) // fakemodel_openai_test.go
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions"):
		m.chatCompletions(w, body)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, ":countTokens"):
		writeJSON(w, map[string]any{"totalTokens": 100})
	case r.Method == http.MethodPost && (strings.HasSuffix(r.URL.Path, ":streamGenerateContent") || strings.HasSuffix(r.URL.Path, ":generateContent")):
		m.gemini(w, body, strings.HasSuffix(r.URL.Path, ":streamGenerateContent"))
	default:
		http.NotFound(w, r)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// textOf returns the text of a tool result's content: a string, or blocks
// of {"type":"text","text":...}, or anything else as JSON.
func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) == nil {
		var b strings.Builder
		for _, bl := range blocks {
			b.WriteString(bl.Text)
		}
		return b.String()
	}
	return string(raw)
}

// --- Anthropic Messages API ------------------------------------------------

func (m *fakeModel) anthropic(w http.ResponseWriter, body []byte) {
	var in struct {
		Stream bool `json:"stream"`
		Tools  []struct {
			Name string `json:"name"`
		} `json:"tools"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := modelRequest{api: "anthropic", path: "/v1/messages", results: map[string]string{}}
	for _, tl := range in.Tools {
		req.tools = append(req.tools, tl.Name)
	}
	for _, msg := range in.Messages {
		var blocks []struct {
			Type      string          `json:"type"`
			ToolUseID string          `json:"tool_use_id"`
			Content   json.RawMessage `json:"content"`
		}
		if msg.Role != "user" || json.Unmarshal(msg.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			if b.Type == "tool_result" {
				req.results[b.ToolUseID] = textOf(b.Content)
			}
		}
	}
	calls := m.decide(req)
	var content []map[string]any
	stop := "end_turn"
	switch {
	case len(calls) > 0:
		stop = "tool_use"
		for i, c := range calls {
			id := fmt.Sprintf("toolu_%02d", i+1)
			m.remember(id, c.tool)
			content = append(content, map[string]any{"type": "tool_use", "id": id, "name": c.tool, "input": c.args})
		}
	case len(req.results) > 0:
		content = []map[string]any{{"type": "text", "text": finalText}}
	default:
		content = []map[string]any{{"type": "text", "text": "ok"}}
	}
	msg := map[string]any{
		"id": "msg_fake", "type": "message", "role": "assistant", "model": "claude-fake",
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 10},
	}
	if !in.Stream {
		writeJSON(w, msg)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	event := func(name string, data map[string]any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	}
	start := map[string]any{}
	for k, v := range msg {
		start[k] = v
	}
	start["content"], start["stop_reason"] = []any{}, nil
	event("message_start", map[string]any{"type": "message_start", "message": start})
	for i, c := range content {
		switch c["type"] {
		case "tool_use":
			args, _ := json.Marshal(c["input"])
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": c["id"], "name": c["name"], "input": map[string]any{}}})
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": string(args)}})
		default:
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "text_delta", "text": c["text"]}})
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 10}})
	event("message_stop", map[string]any{"type": "message_stop"})
}

// --- Gemini API ------------------------------------------------------------

func (m *fakeModel) gemini(w http.ResponseWriter, body []byte, stream bool) {
	var in struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []struct {
				FunctionResponse *struct {
					ID       string          `json:"id"`
					Name     string          `json:"name"`
					Response json.RawMessage `json:"response"`
				} `json:"functionResponse"`
			} `json:"parts"`
		} `json:"contents"`
		Tools []struct {
			FunctionDeclarations []struct {
				Name string `json:"name"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := modelRequest{api: "gemini", path: "generateContent", results: map[string]string{}}
	for _, tl := range in.Tools {
		for _, fd := range tl.FunctionDeclarations {
			req.tools = append(req.tools, fd.Name)
		}
	}
	// Only the last turn's function responses count: those of the calls
	// just made.
	if n := len(in.Contents); n > 0 {
		for _, p := range in.Contents[n-1].Parts {
			if fr := p.FunctionResponse; fr != nil {
				req.results[fr.Name] = string(fr.Response)
			}
		}
	}
	calls := m.decide(req)
	var parts []map[string]any
	switch {
	case len(calls) > 0:
		for _, c := range calls {
			m.remember(c.tool, c.tool)
			parts = append(parts, map[string]any{"functionCall": map[string]any{"name": c.tool, "args": c.args}})
		}
	case len(req.results) > 0:
		parts = []map[string]any{{"text": finalText}}
	default:
		parts = []map[string]any{{"text": "ok"}}
	}
	resp := map[string]any{
		"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": parts},
			"finishReason": "STOP",
			"index":        0,
		}},
		"usageMetadata": map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 10, "totalTokenCount": 20},
		"modelVersion":  "gemini-fake",
	}
	if !stream {
		writeJSON(w, resp)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	b, _ := json.Marshal(resp)
	fmt.Fprintf(w, "data: %s\n\n", b)
}
