package proxy

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/policy"
)

// This file applies the policy (ARCHITECTURE §4): one decision function,
// policy.Rules.Decide, decides visibility when the catalog is built and
// permission at call time; hidden items are left out of the catalog, so a call
// by name gets the same answer as for a name that does not exist.

// SetPolicy replaces the rules (after a policy file or the config changed);
// the catalog is rebuilt and clients get list_changed where it changed. nil
// allows everything.
func (s *Server) SetPolicy(r *policy.Rules) {
	s.rules.Store(r)
	s.rebuild()
}

// toPolicyAnnotations converts an upstream tool's annotations; nil when it
// sent none (so the tool is not read-only).
func toPolicyAnnotations(a *mcp.ToolAnnotations) *policy.Annotations {
	if a == nil {
		return nil
	}
	ro, idem := a.ReadOnlyHint, a.IdempotentHint
	return &policy.Annotations{Title: a.Title, ReadOnly: &ro, Idempotent: &idem, Destructive: a.DestructiveHint, OpenWorld: a.OpenWorldHint}
}

// toMCPAnnotations converts effective annotations back for clients.
func toMCPAnnotations(a *policy.Annotations) *mcp.ToolAnnotations {
	if a == nil {
		return nil
	}
	out := &mcp.ToolAnnotations{Title: a.Title, DestructiveHint: a.Destructive, OpenWorldHint: a.OpenWorld}
	if a.ReadOnly != nil {
		out.ReadOnlyHint = *a.ReadOnly
	}
	if a.Idempotent != nil {
		out.IdempotentHint = *a.Idempotent
	}
	return out
}

// limiters holds one token bucket per exposed tool with a rate limit.
type limiters struct {
	mu      sync.Mutex
	buckets map[string]*bucket // guarded by mu
}

type bucket struct {
	rate   policy.Rate
	tokens float64
	last   time.Time
}

// take takes one token for name under rate, and returns zero, or how long
// until a call is allowed again.
func (l *limiters) take(name string, rate policy.Rate, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buckets == nil {
		l.buckets = make(map[string]*bucket)
	}
	b := l.buckets[name]
	if b == nil || b.rate != rate {
		b = &bucket{rate: rate, tokens: float64(rate.N), last: now}
		l.buckets[name] = b
	}
	perToken := float64(rate.Per) / float64(rate.N)
	b.tokens = math.Min(float64(rate.N), b.tokens+float64(now.Sub(b.last))/perToken)
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return 0
	}
	return time.Duration((1 - b.tokens) * perToken)
}

// capResult cuts a raw tools/call result whose size exceeds max: text blocks
// are shortened and a note says how much was cut and how to get the rest. It
// never drops the cut silently.
func capResult(raw json.RawMessage, max int, d policy.Decision) (json.RawMessage, bool) {
	if max <= 0 || len(raw) <= max {
		return raw, false
	}
	var res map[string]any
	if err := json.Unmarshal(raw, &res); err != nil {
		return toolError("the result (%d bytes) is over the limit of %d bytes (max_result_bytes, %s) and could not be cut; ask for a smaller part", len(raw), max, d.Limits.MaxResultBytesSource), true
	}
	delete(res, "structuredContent") // it would no longer match the cut text
	content, _ := res["content"].([]any)
	budget := max - 512 // room for the note and the JSON around the blocks
	var kept []any
	shown := 0
	for _, c := range content {
		m, _ := c.(map[string]any)
		text, isText := m["text"].(string)
		size := 0
		if isText {
			size = len(text)
		} else if b, err := json.Marshal(c); err == nil {
			size = len(b)
		}
		if size <= budget-shown {
			kept = append(kept, c)
			shown += size
			continue
		}
		if isText && budget-shown > 0 {
			cut := strings.ToValidUTF8(text[:budget-shown], "")
			m["text"] = cut
			kept = append(kept, m)
			shown += len(cut)
		}
		break
	}
	kept = append(kept, map[string]any{"type": "text", "text": fmt.Sprintf(
		"[manifold: this result was cut: %d of %d bytes are shown, %d were cut, because of max_result_bytes = %d (%s). To get the rest, ask for a smaller part (a range, a page, a narrower query).]",
		shown, len(raw), len(raw)-shown, max, d.Limits.MaxResultBytesSource)})
	res["content"] = kept
	out, err := json.Marshal(res)
	if err != nil {
		return raw, false
	}
	return out, true
}
