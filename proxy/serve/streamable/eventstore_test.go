package streamable

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
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

// streamsHold sums what the store's streams hold, records and events, as
// the budget counts them: open streams, then done ones.
func (e *eventStore) streamsHold() (open, done int) {
	for _, m := range e.sessions {
		for _, s := range m {
			c := s.recordCost() + s.dataCost
			if s.done {
				done += c
			} else {
				open += c
			}
		}
	}
	return open, done
}

// TestEventStoreDone: streams whose answers were delivered (Done) hold at
// most a sixteenth of the budget (doneShare) and go first, so that 100,000 short calls
// leave a long call's stream, still open, all its events; a done stream is
// replayed while it is held, refused as purged once it left, and refused
// (its indexes unknown) should it append after that. The counts stay those
// of the streams held, through a session's close.
func TestEventStoreDone(t *testing.T) {
	const budget = 64 << 10
	e := newEventStore(budget)
	ctx := t.Context()
	_ = e.Open(ctx, "s", "long")
	_ = e.Append(ctx, "s", "long", nil)
	_ = e.Append(ctx, "s", "long", []byte("progress 0"))
	resp := make([]byte, 200)
	for i := range 100_000 {
		id := fmt.Sprintf("call%06d", i)
		_ = e.Open(ctx, "s", id)
		_ = e.Append(ctx, "s", id, nil)
		_ = e.Append(ctx, "s", id, append(resp[:0:0], fmt.Sprintf("response %d", i)...))
		e.Done("s", id)
		if e.doneN > budget/doneShare || e.n+e.doneN > budget {
			t.Fatalf("after %d calls: %d bytes done, %d in all; bounds %d and %d", i+1, e.doneN, e.n+e.doneN, budget/doneShare, budget)
		}
		if i%10_000 == 0 {
			_ = e.Append(ctx, "s", "long", fmt.Appendf(nil, "progress %d", i/10_000+1))
		}
	}
	if open, done := e.streamsHold(); open != e.n || done != e.doneN {
		t.Errorf("the streams hold %d open and %d done bytes; the store counts %d and %d", open, done, e.n, e.doneN)
	}
	if got, err := after(e, "s", "long", 0); err != nil || len(got) != 11 || got[0] != "progress 0" || got[10] != "progress 10" {
		t.Errorf("the long call's events after its priming event = %q, %v; want progress 0 to 10, all kept", got, err)
	}
	if got, err := after(e, "s", "call099999", 0); err != nil || len(got) != 1 || got[0][:14] != "response 99999" {
		t.Errorf("the newest done call's resume = %q, %v; want its response", got, err)
	}
	if _, err := after(e, "s", "call000000", 0); !errors.Is(err, mcp.ErrEventsPurged) {
		t.Errorf("the oldest done call's resume: %v; want ErrEventsPurged", err)
	}
	if len(e.done)-e.doneHead > 2*budget/doneShare/streamCost+1024 {
		t.Errorf("the done queue holds %d entries for at most %d streams", len(e.done)-e.doneHead, budget/doneShare/streamCost)
	}
	// A done stream that left and appends again cannot be replayed: its
	// indexes are unknown.
	_ = e.Append(ctx, "s", "call000001", []byte("late"))
	if got, err := after(e, "s", "call000001", 1); !errors.Is(err, mcp.ErrEventsPurged) {
		t.Errorf("resume of a done stream that left, then appended = %q, %v; want ErrEventsPurged", got, err)
	}
	// So is one that appends while done (not expected) until it passes
	// the done streams' bound, then appends again.
	e2 := newEventStore(budget)
	_ = e2.Open(ctx, "s", "x")
	_ = e2.Append(ctx, "s", "x", []byte("zero"))
	e2.Done("s", "x")
	_ = e2.Append(ctx, "s", "x", make([]byte, budget/doneShare))
	_ = e2.Append(ctx, "s", "x", []byte("two"))
	if got, err := after(e2, "s", "x", 0); !errors.Is(err, mcp.ErrEventsPurged) {
		t.Errorf("resume of a done stream that left as it appended = %q, %v; want ErrEventsPurged", got, err)
	}
	// Done twice, or of an unknown or standalone stream, changes nothing.
	n, d := e.n, e.doneN
	e.Done("s", "call099999")
	e.Done("s", "nosuch")
	e.Done("other", "call099999")
	if e.n != n || e.doneN != d {
		t.Errorf("Done of a done or unknown stream: %d, %d bytes -> %d, %d", n, d, e.n, e.doneN)
	}
	_ = e.Open(ctx, "s", "")
	n, d = e.n, e.doneN
	e.Done("s", "")
	if e.n != n || e.doneN != d || e.lookup("s", "").done {
		t.Errorf("Done of the standalone stream moved it: %d, %d bytes -> %d, %d", n, d, e.n, e.doneN)
	}
	_ = e.SessionClosed(ctx, "s")
	if e.n != 0 || e.doneN != 0 || e.records() != 0 || len(e.done)-e.doneHead-e.doneStale != 0 {
		t.Errorf("after the session closed: %d open and %d done bytes, %d records, %d done entries live; want none", e.n, e.doneN, e.records(), len(e.done)-e.doneHead-e.doneStale)
	}
}

// TestEventStoreDoneFull: when open streams fill the budget, done streams
// go before any open stream's event, even within their own bound.
func TestEventStoreDoneFull(t *testing.T) {
	const budget = 64 << 10
	e := newEventStore(budget)
	ctx := t.Context()
	_ = e.Open(ctx, "s", "done")
	_ = e.Append(ctx, "s", "done", []byte("answer"))
	e.Done("s", "done")
	_ = e.Open(ctx, "s", "open")
	for e.n+1000+eventCost <= budget-1000 {
		_ = e.Append(ctx, "s", "open", make([]byte, 1000))
	}
	if e.lookup("s", "done") == nil {
		t.Fatal("the done stream left before the store was full")
	}
	// This event fills the budget less 10 bytes: with the done stream the
	// store passes it, and the next event makes room (room is made before
	// an event is added).
	_ = e.Append(ctx, "s", "open", make([]byte, budget-10-e.n-eventCost))
	open := e.n
	_ = e.Append(ctx, "s", "open", []byte("x"))
	if e.lookup("s", "done") != nil {
		t.Error("the done stream is still held with the budget full of an open stream's events")
	}
	if s := e.lookup("s", "open"); s == nil || s.first != 0 || open != budget-10 {
		t.Errorf("the open stream lost events while a done stream was held (%d bytes held)", open)
	}
}

// TestEventStoreModel runs random sequences of opens, appends, deliveries
// (Done), closes and resumes on a small store, against a model that keeps
// every event: after each step the store's counts are those of the streams
// it holds and within their bounds, and a resume returns exactly the
// model's events after its index, or an error, never another stream's
// events or events under other indexes. As in the proxy, a stream is
// opened once, before its first event, under an id that is not reused.
func TestEventStoreModel(t *testing.T) {
	const budget = 4 << 10
	for seed := range 50 {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		e := newEventStore(budget)
		ctx := t.Context()
		model := map[[2]string][]string{} // every event ever appended, by index
		sessions := []string{"a", "b", "c"}
		streamID := func() (string, string) {
			return sessions[rng.IntN(len(sessions))], fmt.Sprint("s", rng.IntN(12))
		}
		for step := range 2000 {
			session, stream := streamID()
			k := [2]string{session, stream}
			switch op := rng.IntN(10); {
			case op < 2:
				// The SDK and the lean path open a stream once, under an id
				// of their own making, before its first event.
				if _, used := model[k]; !used {
					_ = e.Open(ctx, session, stream)
					model[k] = []string{}
				}
			case op < 6:
				d := fmt.Sprintf("%s/%s/%d/%s", session, stream, len(model[k]), strings.Repeat("x", rng.IntN(300)))
				_ = e.Append(ctx, session, stream, []byte(d))
				model[k] = append(model[k], d)
			case op < 8:
				e.Done(session, stream)
			case op < 9:
				if rng.IntN(10) == 0 {
					_ = e.SessionClosed(ctx, session)
					for mk := range model {
						if mk[0] == session {
							delete(model, mk) // a new stream of that name starts over
						}
					}
				}
			default:
				index := rng.IntN(len(model[k])+1) - 1
				got, err := after(e, session, stream, index)
				if err == nil && fmt.Sprint(got) != fmt.Sprint(model[k][index+1:]) {
					t.Fatalf("seed %d step %d: after(%s, %s, %d) = %.200q; the model has %.200q", seed, step, session, stream, index, got, model[k][index+1:])
				}
			}
			open, done := e.streamsHold()
			if open != e.n || done != e.doneN {
				t.Fatalf("seed %d step %d: the streams hold %d open and %d done bytes; the store counts %d and %d", seed, step, open, done, e.n, e.doneN)
			}
			if e.n+e.doneN > budget+300+64+eventCost+streamCost || e.doneN > budget/doneShare+300+64+eventCost {
				t.Fatalf("seed %d step %d: %d open and %d done bytes; bounds %d and %d, passed by one event at most", seed, step, e.n, e.doneN, budget, budget/doneShare)
			}
		}
	}
}
