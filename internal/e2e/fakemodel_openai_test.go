package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// The scripted model's two OpenAI APIs: the Responses API (Codex, with
// wire_api = "responses") and Chat Completions (opencode's
// @ai-sdk/openai-compatible provider). Same script as the others
// (fakemodel_test.go): the first request offering planned tools gets a
// call of each, a request carrying tool results gets finalText.

// --- OpenAI Responses API ----------------------------------------------------

// Codex offers an MCP server's tools as a namespace ({"type":"namespace",
// "name":"mcp__manifold","tools":[...]}) and expects a call of one as a
// function_call naming the namespace and the tool apart. The offered name
// recorded is namespace + "__" + tool, which offered() matches by suffix.
func (m *fakeModel) responses(w http.ResponseWriter, body []byte) {
	type tool struct {
		Type  string `json:"type"`
		Name  string `json:"name"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	var in struct {
		Tools []tool          `json:"tools"`
		Input json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := modelRequest{api: "responses", path: "/responses", results: map[string]string{}}
	namespaceOf := map[string][2]string{} // recorded name -> namespace, tool
	for _, tl := range in.Tools {
		switch {
		case tl.Type == "namespace":
			for _, sub := range tl.Tools {
				full := tl.Name + "__" + sub.Name
				namespaceOf[full] = [2]string{tl.Name, sub.Name}
				req.tools = append(req.tools, full)
			}
		case tl.Name != "":
			req.tools = append(req.tools, tl.Name)
		}
	}
	var items []struct {
		Type   string          `json:"type"`
		CallID string          `json:"call_id"`
		Output json.RawMessage `json:"output"`
	}
	_ = json.Unmarshal(in.Input, &items) // a string input has no results
	for _, it := range items {
		if it.Type == "function_call_output" {
			req.results[it.CallID] = textOf(it.Output)
		}
	}
	calls := m.decide(req)
	var output []map[string]any
	switch {
	case len(calls) > 0:
		for i, c := range calls {
			id := fmt.Sprintf("call_%02d", i+1)
			m.remember(id, c.tool)
			args, _ := json.Marshal(c.args)
			item := map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%02d", i+1), "call_id": id,
				"name": c.tool, "arguments": string(args), "status": "completed"}
			if ns, ok := namespaceOf[c.tool]; ok {
				item["namespace"], item["name"] = ns[0], ns[1]
			}
			output = append(output, item)
		}
	case len(req.results) > 0:
		output = []map[string]any{responsesText(finalText)}
	default:
		output = []map[string]any{responsesText("ok")}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	event := func(typ string, data map[string]any) {
		data["type"] = typ
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
	}
	event("response.created", map[string]any{"response": map[string]any{"id": "resp_fake"}})
	for i, it := range output {
		event("response.output_item.done", map[string]any{"output_index": i, "item": it})
	}
	event("response.completed", map[string]any{"response": map[string]any{"id": "resp_fake", "usage": map[string]any{
		"input_tokens": 10, "input_tokens_details": nil, "output_tokens": 10, "output_tokens_details": nil, "total_tokens": 20}}})
}

func responsesText(text string) map[string]any {
	return map[string]any{"type": "message", "role": "assistant", "id": "msg_fake",
		"content": []any{map[string]any{"type": "output_text", "text": text}}}
}

// --- OpenAI Chat Completions -------------------------------------------------

func (m *fakeModel) chatCompletions(w http.ResponseWriter, body []byte) {
	var in struct {
		Stream bool `json:"stream"`
		Tools  []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
		Messages []struct {
			Role       string          `json:"role"`
			ToolCallID string          `json:"tool_call_id"`
			Content    json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := modelRequest{api: "chat", path: "/chat/completions", results: map[string]string{}}
	for _, tl := range in.Tools {
		if tl.Function.Name != "" {
			req.tools = append(req.tools, tl.Function.Name)
		}
	}
	for _, msg := range in.Messages {
		if msg.Role == "tool" {
			req.results[msg.ToolCallID] = textOf(msg.Content)
		}
	}
	calls := m.decide(req)
	message := map[string]any{"role": "assistant"}
	finish := "stop"
	switch {
	case len(calls) > 0:
		finish = "tool_calls"
		var tcs []any
		for i, c := range calls {
			id := fmt.Sprintf("call_%02d", i+1)
			m.remember(id, c.tool)
			args, _ := json.Marshal(c.args)
			tcs = append(tcs, map[string]any{"index": i, "id": id, "type": "function",
				"function": map[string]any{"name": c.tool, "arguments": string(args)}})
		}
		message["tool_calls"] = tcs
	case len(req.results) > 0:
		message["content"] = finalText
	default:
		message["content"] = "ok"
	}
	usage := map[string]any{"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}
	if !in.Stream {
		writeJSON(w, map[string]any{"id": "chatcmpl-fake", "object": "chat.completion", "created": 1, "model": "fake",
			"choices": []any{map[string]any{"index": 0, "message": message, "finish_reason": finish}}, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta map[string]any, finish any, usage any) {
		c := map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": "fake",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if usage != nil {
			c["usage"] = usage
		}
		b, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	chunk(message, nil, nil)
	chunk(map[string]any{}, finish, usage)
	fmt.Fprint(w, "data: [DONE]\n\n")
}
