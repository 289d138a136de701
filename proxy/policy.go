package proxy

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
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
	// Definitions derived under the old rules are not reused, even when r
	// is the same value: it may have been changed in place.
	s.catMu.Lock()
	s.derived = nil
	s.catMu.Unlock()
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

// shortNoteBelow is the max_result_bytes under which the note that says a
// result was cut is the short one, so that most of max is left to the result.
const shortNoteBelow = 1024

// capResult cuts a raw tools/call result whose size exceeds max, so that the
// whole result fits in max bytes, every member counted: text blocks are
// shortened, blocks that do not fit are left out, and so are
// structuredContent (it would no longer match the cut text), _meta and any
// other member but content and isError. A note block says how much was cut,
// what was left out and how to get the rest: the cut is never silent. Only a
// max smaller than the note itself gives a result over max.
func capResult(raw json.RawMessage, max int, d policy.Decision) (json.RawMessage, bool) {
	if max <= 0 || len(raw) <= max {
		return raw, false
	}
	var res map[string]json.RawMessage
	if err := json.Unmarshal(raw, &res); err != nil {
		return toolError("the result (%d bytes) is over the limit of %d bytes (max_result_bytes, %s) and could not be cut; ask for a smaller part", len(raw), max, d.Limits.MaxResultBytesSource), true
	}
	var content []json.RawMessage
	_ = json.Unmarshal(res["content"], &content) // not an array: no block to keep
	var left []string
	for k := range res {
		if k != "content" && k != "isError" {
			left = append(left, k)
		}
	}
	slices.Sort(left)
	leftOut := ""
	if len(left) > 0 {
		leftOut = " Left out as well: " + strings.Join(left, ", ") + "."
	}
	build := func(budget int) json.RawMessage {
		kept, shown := keepBlocks(content, budget)
		text := fmt.Sprintf(
			"[manifold: this result was cut: %d of %d bytes are shown, %d were cut, because of max_result_bytes = %d (%s).%s To get the rest, ask for a smaller part (a range, a page, a narrower query).]",
			shown, len(raw), len(raw)-shown, max, d.Limits.MaxResultBytesSource, leftOut)
		if max < shortNoteBelow { // the long note would leave little room for the result
			text = fmt.Sprintf("[manifold: cut to %d of %d bytes by max_result_bytes = %d (%s); ask for a smaller part]",
				shown, len(raw), max, d.Limits.MaxResultBytesSource)
		}
		note, _ := json.Marshal(map[string]string{"type": "text", "text": text})
		out := map[string]json.RawMessage{}
		if string(res["isError"]) == "true" { // only a real boolean is kept
			out["isError"] = res["isError"]
		}
		blocks, _ := json.Marshal(append(kept, note))
		out["content"] = blocks
		b, _ := json.Marshal(out)
		return b
	}
	budget := max // shrunk by what the result is over max, until it fits
	for range 10 {
		out := build(budget)
		if len(out) <= max || budget <= 0 {
			return out, true
		}
		budget -= len(out) - max
	}
	return build(0), true
}

// keepBlocks returns the content blocks that fit in budget bytes, in order,
// the text of the first one that does not fit shortened to fit if it is a
// text block, and how many bytes of them are shown: the text of text blocks,
// the whole encoding of others.
func keepBlocks(content []json.RawMessage, budget int) ([]json.RawMessage, int) {
	var kept []json.RawMessage
	used, shown := 0, 0
	for _, c := range content {
		var m map[string]any
		isText := json.Unmarshal(c, &m) == nil && m["type"] == "text"
		text, _ := m["text"].(string)
		if len(c) <= budget-used {
			kept = append(kept, c)
			used += len(c)
			if isText {
				shown += len(text)
			} else {
				shown += len(c)
			}
			continue
		}
		if isText {
			if b, n, ok := cutText(m, text, budget-used); ok {
				kept = append(kept, b)
				used += len(b)
				shown += n
			}
		}
		break
	}
	return kept, shown
}

// cutText returns the text block m with its text shortened so that the
// encoded block takes at most room bytes, and the length of the text kept,
// if some of the text fits.
func cutText(m map[string]any, text string, room int) ([]byte, int, bool) {
	m["text"] = ""
	empty, err := json.Marshal(m)
	if err != nil || len(empty) >= room {
		return nil, 0, false
	}
	// A text labelled as data (label.go) keeps its markers: only its body
	// is cut, so that the label still ends where the server's text does.
	head, tail, labelled := labelBounds(text)
	keep := func(n int) string {
		if !labelled {
			return strings.ToValidUTF8(text[:n], "")
		}
		body := min(n-head-tail, len(text)-head-tail)
		if body < 0 {
			return ""
		}
		return text[:head] + strings.ToValidUTF8(text[head:head+body], "") + text[len(text)-tail:]
	}
	n := min(room-len(empty), len(text))
	// Escapes make the encoded text longer than the text: shrink until it
	// fits, in proportion to the excess, a bounded number of times.
	for range 16 {
		cut := keep(n)
		m["text"] = cut
		b, err := json.Marshal(m)
		if err != nil {
			return nil, 0, false
		}
		if len(b) <= room {
			return b, len(cut), cut != ""
		}
		n = n * (room - len(empty)) / (len(b) - len(empty))
	}
	return nil, 0, false
}
