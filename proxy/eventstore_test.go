package proxy

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// after collects the stream's events after index, or the error.
func after(e *eventStore, session, stream string, index int) ([]string, error) {
	var out []string
	for d, err := range e.After(context.Background(), session, stream, index) {
		if err != nil {
			return nil, err
		}
		out = append(out, string(d))
	}
	return out, nil
}

// records counts the streams the store holds.
func (e *eventStore) records() int {
	n := 0
	for _, m := range e.sessions {
		n += len(m)
	}
	return n
}

// TestEventStoreReplays: a stream's events come back after any index it
// holds, in order, with the indexes the SDK gave them (a priming event
// without data included); a session's streams go when it closes.
func TestEventStoreReplays(t *testing.T) {
	e := newEventStore(1 << 20)
	ctx := t.Context()
	_ = e.Open(ctx, "s1", "a")
	for _, d := range []string{"", "one", "two"} {
		_ = e.Append(ctx, "s1", "a", []byte(d))
	}
	if got, err := after(e, "s1", "a", -1); err != nil || fmt.Sprint(got) != "[ one two]" {
		t.Errorf("after -1 = %q, %v; want the three events", got, err)
	}
	if got, err := after(e, "s1", "a", 1); err != nil || fmt.Sprint(got) != "[two]" {
		t.Errorf("after 1 = %q, %v; want [two]", got, err)
	}
	if got, err := after(e, "s1", "a", 2); err != nil || len(got) != 0 {
		t.Errorf("after the last = %q, %v; want nothing", got, err)
	}
	if _, err := after(e, "s2", "a", -1); err == nil {
		t.Error("another session's stream of the same id replayed")
	}
	_ = e.SessionClosed(ctx, "s1")
	if _, err := after(e, "s1", "a", -1); !errors.Is(err, mcp.ErrEventsPurged) {
		t.Errorf("after the session closed: %v; want ErrEventsPurged", err)
	}
	if e.n != 0 || e.records() != 0 {
		t.Errorf("after the session closed the store holds %d bytes in %d records; want none", e.n, e.records())
	}
}

// TestEventStoreBounded: a session that makes 100,000 calls, each a stream
// with a priming event and a response, keeps the store within its budget
// in bytes, records and queue; the newest calls can be resumed, the oldest
// are refused as purged, never answered with another's events; and the
// session's standalone stream keeps its record and its indexes.
func TestEventStoreBounded(t *testing.T) {
	const budget = 64 << 10
	e := newEventStore(budget)
	ctx := t.Context()
	_ = e.Open(ctx, "s", "")
	_ = e.Append(ctx, "s", "", []byte("early"))
	resp := make([]byte, 200)
	maxQueue := 0
	for i := range 100_000 {
		id := fmt.Sprintf("stream%06d", i)
		_ = e.Open(ctx, "s", id)
		_ = e.Append(ctx, "s", id, nil)
		_ = e.Append(ctx, "s", id, append(resp[:0:0], fmt.Sprintf("response %d", i)...))
		if e.n > budget+len(resp)+eventCost+streamCost+64 {
			t.Fatalf("after %d calls the store counts %d bytes; budget %d", i+1, e.n, budget)
		}
		maxQueue = max(maxQueue, len(e.queue))
	}
	if r := e.records(); r > budget/streamCost {
		t.Errorf("%d records held; at most %d fit the budget", r, budget/streamCost)
	}
	if maxQueue > 4*budget/eventCost+2048 {
		t.Errorf("the queue reached %d entries for a budget of %d bytes", maxQueue, budget)
	}
	if got, err := after(e, "s", "stream099999", 0); err != nil || len(got) != 1 || got[0][:14] != "response 99999" {
		t.Errorf("the newest call's resume = %q, %v; want its response", got, err)
	}
	if _, err := after(e, "s", "stream000000", 0); !errors.Is(err, mcp.ErrEventsPurged) {
		t.Errorf("the oldest call's resume: %v; want ErrEventsPurged", err)
	}
	// The standalone stream: its early event went, its record stayed, and
	// its next event has index 1.
	if _, err := after(e, "s", "", -1); !errors.Is(err, mcp.ErrEventsPurged) {
		t.Errorf("the standalone stream's replay from the start: %v; want ErrEventsPurged (its first event went)", err)
	}
	_ = e.Append(ctx, "s", "", []byte("late"))
	if got, err := after(e, "s", "", 0); err != nil || fmt.Sprint(got) != "[late]" {
		t.Errorf("the standalone stream after index 0 = %q, %v; want [late]", got, err)
	}
}

// TestEventStoreLostStream: a stream whose record left while it was quiet,
// and that then appends again, is refused on resume (its indexes are
// unknown) instead of replaying events under the wrong indexes.
func TestEventStoreLostStream(t *testing.T) {
	e := newEventStore(8 << 10)
	ctx := t.Context()
	_ = e.Open(ctx, "s", "long")
	_ = e.Append(ctx, "s", "long", []byte("progress 0"))
	for i := range 1000 {
		id := fmt.Sprint("call", i)
		_ = e.Open(ctx, "s", id)
		_ = e.Append(ctx, "s", id, make([]byte, 100))
	}
	if e.lookup("s", "long") != nil {
		t.Fatal("the quiet stream is still held; the test needs it gone")
	}
	_ = e.Append(ctx, "s", "long", []byte("progress 1"))
	if got, err := after(e, "s", "long", 0); !errors.Is(err, mcp.ErrEventsPurged) {
		t.Errorf("resume of the stream that left = %q, %v; want ErrEventsPurged", got, err)
	}
}

// TestEventStoreManySessions: sessions that open and close keep neither
// records nor queue entries.
func TestEventStoreManySessions(t *testing.T) {
	e := newEventStore(10 << 20)
	ctx := t.Context()
	for i := range 50_000 {
		s := fmt.Sprint("session", i)
		_ = e.Open(ctx, s, "")
		_ = e.Open(ctx, s, "x")
		_ = e.Append(ctx, s, "x", []byte("answer"))
		_ = e.SessionClosed(ctx, s)
	}
	if e.n != 0 || e.records() != 0 || len(e.queue)-e.head > 2048 {
		t.Errorf("after 50,000 closed sessions: %d bytes, %d records, %d queue entries; want none (at most 2,048 entries)", e.n, e.records(), len(e.queue)-e.head)
	}
}
