package guard

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/proxy/internal/wire"
)

// This file cuts a tools/call result to the policy's max_result_bytes
// (Cap), the last of the result filters: a label is cut with its markers
// kept (label.go).

// Cap cuts a raw tools/call result whose size exceeds the max_result_bytes
// of its decision d (capResult), and reports whether it did.
func (g *Guard) Cap(raw json.RawMessage, d policy.Decision) (json.RawMessage, bool) {
	return capResult(raw, d.Limits.MaxResultBytes, d)
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
		return wire.ToolError("the result (%d bytes) is over the limit of %d bytes (max_result_bytes, %s) and could not be cut; ask for a smaller part", len(raw), max, d.Limits.MaxResultBytesSource), true
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
