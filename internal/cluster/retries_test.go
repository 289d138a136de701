package cluster

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/manifold-mcp/manifold/proxy"
)

// testServe is a replica's side of forwarded retries in TestRetries:
// "wait" waits for its context and reports its end on cancelled; "slow"
// answers after slow; "progress" notifies 0, 1, 2 first; anything else is
// answered at once.
type testServe struct {
	slow      time.Duration
	cancelled chan string
	mu        sync.Mutex
	seen      []string // guarded by mu
}

func (ts *testServe) serve(ctx context.Context, retry []byte, notify func([]byte)) []byte {
	ts.mu.Lock()
	ts.seen = append(ts.seen, string(retry))
	ts.mu.Unlock()
	switch string(retry) {
	case "wait":
		<-ctx.Done()
		ts.cancelled <- string(retry)
		return nil
	case "progress":
		for i := range 3 {
			notify([]byte{'0' + byte(i)})
		}
	case "slow":
		select {
		case <-time.After(ts.slow):
		case <-ctx.Done():
			return nil
		}
	}
	return []byte("served:" + string(retry))
}

func (ts *testServe) served() []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]string(nil), ts.seen...)
}

// serving runs st.ServeRetries with ts until the test ends, and waits until
// it has subscribed (a retry published to it reaches a subscriber).
func serving(t *testing.T, st *Store, ts *testServe) context.CancelFunc {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		st.ServeRetries(ctx, ts.serve)
	}()
	t.Cleanup(func() { cancel(); <-done })
	for i := 0; ; i++ {
		n, err := st.rdb.PubSubNumSub(t.Context(), st.retryChannel(st.Replica())).Result()
		if err == nil && n[st.retryChannel(st.Replica())] > 0 {
			return cancel
		}
		if i == 500 {
			t.Fatalf("replica %s did not subscribe to its retry channel: %v", st.Replica(), err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRetries: a retry forwarded by a replica of the deployment is served
// by the replica it names, and its answer comes back; one that takes longer
// than three beats is waited for (the serving replica beats); a forwarder
// that gives up cancels the retry where it is served; a replica that stops
// serving is noticed within three beats (ErrNoReplica); nothing is served
// without a listener (ErrNoReplica), nor what another key signed (dropped,
// logged once, and the forwarder hears nothing).
func TestRetries(t *testing.T) {
	const beat = 50 * time.Millisecond
	m := miniredis.RunT(t)
	a, logs := answerStore(t, m, testClusterKey, 64)
	b, _ := answerStore(t, m, testClusterKey, 64)
	stranger, _ := answerStore(t, m, "another-key-0123456789abcdef0123456789", 64)
	for _, st := range []*Store{a, b, stranger} {
		st.retryBeat = beat
	}
	ctx := t.Context()
	if _, err := b.ForwardRetry(ctx, a.Replica(), []byte("early"), nil); !errors.Is(err, proxy.ErrNoReplica) {
		t.Fatalf("a retry forwarded to a replica that does not listen: %v, want ErrNoReplica", err)
	}

	as := &testServe{slow: 8 * beat, cancelled: make(chan string, 4)}
	stopA := serving(t, a, as)
	serving(t, b, &testServe{cancelled: make(chan string, 4)})
	serving(t, stranger, &testServe{cancelled: make(chan string, 4)})

	out, err := b.ForwardRetry(ctx, a.Replica(), []byte("hello"), nil)
	if err != nil || string(out) != "served:hello" {
		t.Fatalf("forwarded retry = %q, %v; want served:hello", out, err)
	}
	var notes []string
	out, err = b.ForwardRetry(ctx, a.Replica(), []byte("progress"), func(p []byte) { notes = append(notes, string(p)) })
	if err != nil || string(out) != "served:progress" || strings.Join(notes, ",") != "0,1,2" {
		t.Fatalf("forwarded retry with progress = %q, %v, progress %q; want served:progress after 0,1,2", out, err, notes)
	}
	out, err = b.ForwardRetry(ctx, a.Replica(), []byte("slow"), nil)
	if err != nil || string(out) != "served:slow" {
		t.Fatalf("a retry served in 8 beats = %q, %v; want served:slow (the serving replica beats while it works)", out, err)
	}

	gctx, giveUp := context.WithTimeout(ctx, 4*beat)
	_, err = b.ForwardRetry(gctx, a.Replica(), []byte("wait"), nil)
	giveUp()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a retry whose forwarder gave up: %v, want its context's error", err)
	}
	select {
	case <-as.cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the retry was not cancelled where it was served after its forwarder gave up")
	}

	if _, err := b.ForwardRetry(ctx, a.Replica(), make([]byte, maxRetryReply+1), nil); err == nil || errors.Is(err, proxy.ErrNoReplica) {
		t.Errorf("a retry over the bound: %v, want an error saying it is too large", err)
	}

	before := len(as.served())
	_, err = stranger.ForwardRetry(ctx, a.Replica(), []byte("forged"), nil)
	if !errors.Is(err, proxy.ErrNoReplica) {
		t.Fatalf("a retry signed with another key: %v, want ErrNoReplica (nothing answers it)", err)
	}
	if got := as.served(); len(got) != before {
		t.Fatalf("a retry signed with another key was served: %q", got[before:])
	}
	if !strings.Contains(logs.String(), "dropped a message on this replica's retry channel") {
		t.Errorf("the forged retry was not logged: %s", logs.String())
	}

	// The serving replica stops while it serves: its beats stop, and the
	// forwarder gives up within three of them.
	errc := make(chan error, 1)
	go func() {
		_, err := b.ForwardRetry(ctx, a.Replica(), []byte("wait"), nil)
		errc <- err
	}()
	select {
	case <-as.cancelled: // not yet: the retry must first be served
		t.Fatal("cancelled before the replica stopped")
	case <-time.After(3 * beat):
	}
	stopA()
	select {
	case err := <-errc:
		if !errors.Is(err, proxy.ErrNoReplica) {
			t.Fatalf("a retry whose replica stopped: %v, want ErrNoReplica", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the forwarder still waits 5s after the serving replica stopped")
	}
}

// TestRetriesWithoutKey: without [cluster] key nothing is forwarded, and
// serving returns at once.
func TestRetriesWithoutKey(t *testing.T) {
	m := miniredis.RunT(t)
	a, _ := answerStore(t, m, "", 64)
	if _, err := a.ForwardRetry(t.Context(), "0123456789abcdef", []byte("x"), nil); !errors.Is(err, errNoKey) {
		t.Fatalf("ForwardRetry without a key: %v, want errNoKey", err)
	}
	done := make(chan struct{})
	go func() {
		a.ServeRetries(t.Context(), func(context.Context, []byte, func([]byte)) []byte { return nil })
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("ServeRetries without a key did not return")
	}
}
