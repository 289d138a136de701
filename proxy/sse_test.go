package proxy

import "strings"

// sseEvent is one server-sent event, its fields as written.
type sseEvent struct {
	Event, ID, Retry, Data string
}

// parseSSE splits an SSE body into its events.
func parseSSE(body string) []sseEvent {
	var out []sseEvent
	for _, block := range strings.Split(body, "\n\n") {
		if strings.TrimSpace(block) == "" {
			continue
		}
		var e sseEvent
		for _, line := range strings.Split(block, "\n") {
			k, v, _ := strings.Cut(line, ":")
			v = strings.TrimPrefix(v, " ")
			switch k {
			case "event":
				e.Event = v
			case "id":
				e.ID = v
			case "retry":
				e.Retry = v
			case "data":
				e.Data += v
			}
		}
		out = append(out, e)
	}
	return out
}
