package streamable

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// eventStore keeps the events of the initialize era's streams for
// resumption (mcp.EventStore), bounded in all it holds: the events' data,
// and the records of the streams and events themselves.
//
// The go-sdk's MemoryEventStore bounds the data only: every stream keeps
// its record for as long as its session lives, though each POST has a
// stream of its own and a priming event has no data, and each purge walks
// every record of every session. Measured over HTTP at 2025-11-25 (one
// session, 8 calls in flight): the proxy's own memory grew by 0.7 MB per
// 1,000 calls (RssAnon 9.7 MB after 2,000 calls, 23 MB after 20,000, 48 MB
// after 60,000). Here events leave oldest first, in one queue for all
// sessions, each at a constant cost; a stream whose events have all left
// leaves with its last one, except a session's standalone stream (id "",
// one per session, dropped with it).
//
// A stream that appends again after its record left (a long call quiet
// while the budget turned over) gets a record marked lost: its indexes are
// unknown, so a resume of it fails as one of purged events does (the SDK
// answers 400), and delivery goes on as before.
//
// A stream whose answer was written to a client still connected (Done: the
// lean path's calls and lists, and the SDK's POSTs through serveDone) is
// kept, whole, in a second queue of done streams, bounded by a sixteenth of
// the budget and the first to go when the store is full: a client resumes a stream that dropped, and one that was delivered
// to a connection still open has not dropped unless the connection fails
// within the moment the bytes are in flight. So a sustained load of short
// calls keeps about a sixteenth of the budget, not all of it (measured over
// HTTP, 60,000 calls, the default 10 MiB: the proxy's highest RSS 50 MB
// with one queue, 24.5 MB with both), and the events of calls still running,
// a long call's progress among them, are not pushed out by the answers of
// calls that finished.
type eventStore struct {
	mu       sync.Mutex
	max      int                                // bytes
	n        int                                // bytes held by streams not done, with the records' costs
	sessions map[string]map[string]*eventStream // session id -> stream id -> its events
	queue    []queued                           // from head on: events and records, oldest first
	head     int
	stale    int // entries of the queue, from head on, of streams that have left or are done

	doneMax   int            // bytes done streams may hold: max/doneShare
	doneN     int            // bytes held by done streams, records and events
	done      []*eventStream // from doneHead on: done streams, oldest first
	doneHead  int
	doneStale int // entries of done, from doneHead on, of streams that have left
}

// eventStream is one stream's events: data[i] is the event of index
// first+i.
type eventStream struct {
	session, id string
	first       int
	data        [][]byte
	dataCost    int  // the costs of data's events
	queued      int  // entries of the queue that are this stream's
	lost        bool // re-created after it left: indexes unknown
	gone        bool // left the store
	done        bool // in the done queue; its entries of the queue are stale
}

// recordCost is what s's record counts against the budget.
func (s *eventStream) recordCost() int { return streamCost + len(s.session) + len(s.id) }

// queued is an entry of the queue: an event of s (its cost), or s's record
// (event false), which leaves the store when it comes up empty.
type queued struct {
	s     *eventStream
	cost  int
	event bool
}

// doneShare is the part of the budget that done streams may hold: 1/16,
// 640 KiB of the default 10 MiB, some 1,300 answers of a few hundred bytes
// (a sixteenth measured 24.3 and 24.6 MB of highest RSS under 60,000 calls
// over HTTP, an eighth 25.2 and 25.4).
const doneShare = 16

// The costs counted besides the data: a record (its map entry, the struct
// and its ids), an event (its slice header and queue entry).
const (
	streamCost = 160
	eventCost  = 48
)

// errEventsLost is After's error for a stream whose record left the store
// while it went on.
var errEventsLost = errors.New("events of this stream were dropped")

func newEventStore(max int) *eventStore {
	return &eventStore{max: max, doneMax: max / doneShare, sessions: map[string]map[string]*eventStream{}}
}

// Open makes sure the stream has a record (mcp.EventStore), and notes it
// in ctx's streamsOpened, if any.
func (e *eventStore) Open(ctx context.Context, session, stream string) error {
	if so, _ := ctx.Value(streamsOpenedKey{}).(*streamsOpened); so != nil {
		so.ids = append(so.ids, [2]string{session, stream})
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.lookup(session, stream) == nil {
		e.create(session, stream, false)
		e.purge()
	}
	return nil
}

// Append keeps data as the stream's next event (mcp.EventStore). Room is
// made first, so that the newest event is always kept (the store may pass
// its budget by that one).
func (e *eventStore) Append(_ context.Context, session, stream string, data []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.lookup(session, stream)
	if s == nil {
		s = e.create(session, stream, true) // it left: a new stream is opened first
	}
	e.purge()
	if s.gone { // it left to make room, empty: its indexes are still known if none went
		s = e.create(session, stream, s.lost || s.first != 0)
	}
	cost := len(data) + eventCost
	s.data = append(s.data, data)
	s.dataCost += cost
	if s.done { // not expected: kept with the stream's other events
		e.doneN += cost
		return nil
	}
	s.queued++
	e.n += cost
	e.queue = append(e.queue, queued{s: s, cost: cost, event: true})
	return nil
}

// Done moves the stream to the done queue: its answer went to a client
// still connected. The session's standalone stream (id "") is never done.
func (e *eventStore) Done(session, stream string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.lookup(session, stream)
	if s == nil || s.gone || s.done || stream == "" {
		return
	}
	s.done = true
	cost := s.recordCost() + s.dataCost
	e.n -= cost
	e.doneN += cost
	e.stale += s.queued
	s.queued = 0
	e.done = append(e.done, s)
	e.purge()
}

// After returns the stream's events after index (mcp.EventStore); an error
// if any of them left.
func (e *eventStore) After(_ context.Context, session, stream string, index int) iter.Seq2[[]byte, error] {
	data, err := func() ([][]byte, error) {
		e.mu.Lock()
		defer e.mu.Unlock()
		s := e.lookup(session, stream)
		switch {
		case e.sessions[session] == nil:
			return nil, fmt.Errorf("unknown session %q: %w", session, mcp.ErrEventsPurged)
		case s == nil:
			return nil, fmt.Errorf("unknown stream %q of session %q: %w", stream, session, mcp.ErrEventsPurged)
		case s.lost:
			return nil, fmt.Errorf("stream %q of session %q: %w: %w", stream, session, errEventsLost, mcp.ErrEventsPurged)
		}
		start := index + 1 - s.first
		if start < 0 {
			return nil, fmt.Errorf("stream %q of session %q, after %d: %w", stream, session, index, mcp.ErrEventsPurged)
		}
		if start >= len(s.data) {
			return nil, nil
		}
		return slices.Clone(s.data[start:]), nil
	}()
	return func(yield func([]byte, error) bool) {
		if err != nil {
			yield(nil, err)
			return
		}
		for _, d := range data {
			if !yield(d, nil) {
				return
			}
		}
	}
}

// SessionClosed drops the session's streams (mcp.EventStore).
func (e *eventStore) SessionClosed(_ context.Context, session string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range e.sessions[session] {
		e.leave(s)
	}
	delete(e.sessions, session)
	e.compact()
	return nil
}

func (e *eventStore) lookup(session, stream string) *eventStream {
	return e.sessions[session][stream]
}

// create adds a record for the stream and queues it.
func (e *eventStore) create(session, stream string, lost bool) *eventStream {
	m := e.sessions[session]
	if m == nil {
		m = map[string]*eventStream{}
		e.sessions[session] = m
	}
	s := &eventStream{session: session, id: stream, lost: lost, queued: 1}
	m[stream] = s
	e.n += s.recordCost()
	e.queue = append(e.queue, queued{s: s})
	return s
}

// leave takes s out of the store; its entries still queued become stale.
func (e *eventStore) leave(s *eventStream) {
	if s.gone {
		return
	}
	s.gone = true
	if s.done {
		e.doneN -= s.recordCost() + s.dataCost
		e.doneStale++
	} else {
		e.n -= s.recordCost() + s.dataCost
		e.stale += s.queued
	}
	s.data, s.dataCost = nil, 0
}

// forget deletes s's record from its session's streams.
func (e *eventStore) forget(s *eventStream) {
	delete(e.sessions[s.session], s.id)
	if len(e.sessions[s.session]) == 0 {
		delete(e.sessions, s.session)
	}
}

// purge drops the oldest done streams while they pass their bound or the
// store its budget, then the oldest entries of the queue until the store is
// within its budget.
func (e *eventStore) purge() {
	for (e.doneN > e.doneMax || e.n+e.doneN > e.max) && e.doneHead < len(e.done) {
		s := e.done[e.doneHead]
		e.done[e.doneHead] = nil
		e.doneHead++
		if s.gone {
			e.doneStale--
			continue
		}
		e.forget(s)
		s.gone = true
		s.lost = s.lost || s.first+len(s.data) > 0 // should it append again
		e.doneN -= s.recordCost() + s.dataCost
		s.data, s.dataCost = nil, 0
	}
	for e.n+e.doneN > e.max && e.head < len(e.queue) {
		q := e.queue[e.head]
		e.queue[e.head] = queued{}
		e.head++
		s := q.s
		if s.gone || s.done {
			e.stale--
			continue
		}
		s.queued--
		if q.event {
			s.data[0] = nil
			s.data = s.data[1:]
			s.first++
			s.dataCost -= q.cost
			e.n -= q.cost
		}
		if s.queued == 0 && s.id != "" { // its record and events all came up: it leaves
			e.forget(s)
			s.gone = true
			e.n -= s.recordCost()
		}
	}
	e.compact()
}

// compact drops the queues' consumed and stale entries once they are the
// greater part of them.
func (e *eventStore) compact() {
	if live := len(e.queue) - e.head - e.stale; e.head+e.stale >= 1024 && e.head+e.stale >= live {
		out := make([]queued, 0, live+live/4)
		for _, q := range e.queue[e.head:] {
			if !q.s.gone && !q.s.done {
				out = append(out, q)
			}
		}
		e.queue, e.head, e.stale = out, 0, 0
	}
	if live := len(e.done) - e.doneHead - e.doneStale; e.doneHead+e.doneStale >= 1024 && e.doneHead+e.doneStale >= live {
		out := make([]*eventStream, 0, live+live/4)
		for _, s := range e.done[e.doneHead:] {
			if !s.gone {
				out = append(out, s)
			}
		}
		e.done, e.doneHead, e.doneStale = out, 0, 0
	}
}

// held returns the bytes the store holds for open and for done streams,
// the records' costs counted.
func (e *eventStore) held() (open, done int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n, e.doneN
}

// figures are what the metrics show of the store: the bytes held by
// streams open and by streams delivered, and the budget.
func (e *eventStore) figures() (open, delivered, max int) {
	open, delivered = e.held()
	return open, delivered, e.max
}

// streamsOpened collects the streams the SDK opens as it serves one POST:
// it opens a POST's stream with the request's context.
type streamsOpened struct{ ids [][2]string }

type streamsOpenedKey struct{}

// serveDone has h (the SDK's handler, or an adopted session's transport)
// serve the POST r, and moves the streams it opened to the done queue if
// it returned to a client still connected: the SDK returns from a POST
// once every answer of its stream is written, or when the client went away
// or the session closed.
func (e *eventStore) serveDone(h http.Handler, w http.ResponseWriter, r *http.Request) {
	if e == nil || r.Method != http.MethodPost {
		h.ServeHTTP(w, r)
		return
	}
	so := &streamsOpened{}
	h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), streamsOpenedKey{}, so)))
	if r.Context().Err() != nil {
		return
	}
	for _, id := range so.ids {
		e.Done(id[0], id[1])
	}
}
