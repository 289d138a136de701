package cluster

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/manifold-mcp/manifold/proxy"
)

const testClusterKey = "cluster-key-0123456789abcdef0123456789"

// answerStore returns a Store on m with key and a bound on answers.
func answerStore(t *testing.T, m *miniredis.Miniredis, key string, maxAnswer int) (*Store, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	s, err := New(Options{URL: "redis://" + m.Addr() + "/0", KeyPrefix: "test:", Timeout: time.Second, Key: []byte(key), MaxAnswerBytes: maxAnswer,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, logs
}

type delivered struct{ session, msg string }

// TestAnswers: an answer published by a replica of the deployment reaches
// the replica it names, with its session; what another key signed, what
// was signed for another replica, what is too large and what is not a
// message at all are dropped (the first logged, once); nothing is
// delivered without a listener (ErrNoReplica); Redis down is
// ErrSharedUnavailable; the listener ends with its context.
func TestAnswers(t *testing.T) {
	m := miniredis.RunT(t)
	a, logs := answerStore(t, m, testClusterKey, 64)
	b, _ := answerStore(t, m, testClusterKey, 64)
	stranger, _ := answerStore(t, m, "another-key-0123456789abcdef0123456789", 64)
	if a.Replica() == b.Replica() || len(a.Replica()) != 16 {
		t.Fatalf("replica names %q and %q: want two different names of 16 hex digits", a.Replica(), b.Replica())
	}
	ctx := t.Context()
	msg := []byte(`{"jsonrpc":"2.0","id":3,"result":{}}`)
	if err := b.PublishAnswer(ctx, a.Replica(), "S1", msg); !errors.Is(err, proxy.ErrNoReplica) {
		t.Fatalf("publish without a listener: %v, want ErrNoReplica", err)
	}

	lctx, cancel := context.WithCancel(ctx)
	got := make(chan delivered, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.ListenAnswers(lctx, func(session string, msg []byte) { got <- delivered{session, string(msg)} })
	}()
	defer func() { cancel(); <-done }()
	for i := 0; ; i++ { // until a has subscribed
		err := b.PublishAnswer(ctx, a.Replica(), "S1", msg)
		if err == nil {
			break
		}
		if !errors.Is(err, proxy.ErrNoReplica) || i == 200 {
			t.Fatalf("publish to a listening replica: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	next := func() delivered {
		t.Helper()
		select {
		case d := <-got:
			return d
		case <-time.After(5 * time.Second):
			t.Fatal("nothing delivered within 5s")
			return delivered{}
		}
	}
	if d := next(); d != (delivered{"S1", string(msg)}) {
		t.Fatalf("delivered %+v, want S1 and the answer", d)
	}

	// Each of these is dropped; the good answer after them is the next
	// one delivered.
	if err := stranger.PublishAnswer(ctx, a.Replica(), "S1", msg); err != nil {
		t.Fatalf("publish signed with another key: %v", err)
	}
	forOther := append(b.answerMAC("0000000000000000", "S1", msg), 0, 0, 0, 2, 'S', '1')
	m.Publish(a.answerChannel(a.Replica()), string(append(forOther, msg...)))
	m.Publish(a.answerChannel(a.Replica()), "not a message")
	big := []byte(`{"jsonrpc":"2.0","id":3,"result":{"pad":"` + strings.Repeat("x", 64) + `"}}`)
	if err := b.PublishAnswer(ctx, a.Replica(), "S1", big); err != nil {
		t.Fatalf("publish a large answer: %v", err)
	}
	if err := b.PublishAnswer(ctx, a.Replica(), "S2", []byte(`{"id":4,"result":{}}`)); err != nil {
		t.Fatal(err)
	}
	if d := next(); d != (delivered{"S2", `{"id":4,"result":{}}`}) {
		t.Fatalf("delivered %+v after the bad messages, want only the good one (S2)", d)
	}
	if n := strings.Count(logs.String(), "dropped a message"); n != 1 {
		t.Errorf("the dropped messages were logged %d times, want once:\n%s", n, logs)
	}
	if strings.Contains(logs.String(), testClusterKey) {
		t.Errorf("the log shows the key:\n%s", logs)
	}

	m.Close()
	if err := b.PublishAnswer(ctx, a.Replica(), "S1", msg); !errors.Is(err, proxy.ErrSharedUnavailable) {
		t.Errorf("publish with Redis down: %v, want ErrSharedUnavailable", err)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("ListenAnswers did not return within 5s of its context's end")
	}
}

// TestAnswersWithoutKey: without the [cluster] key nothing is relayed.
func TestAnswersWithoutKey(t *testing.T) {
	m := miniredis.RunT(t)
	s, _ := answerStore(t, m, "", 0)
	if err := s.PublishAnswer(t.Context(), "0000000000000000", "S1", []byte(`{"id":1,"result":{}}`)); err == nil || !strings.Contains(err.Error(), "set key in [cluster]") {
		t.Errorf("publish without a key: %v, want an error that says to set the key", err)
	}
}

// freezer forwards loopback connections to a server; freeze stalls every
// connection open at that moment, both ways, without closing it (a peer
// gone without a reset), while new connections are forwarded as before.
type freezer struct {
	ln     net.Listener
	mu     sync.Mutex
	frozen []chan struct{} // one per connection: closed when it freezes
}

func newFreezer(t *testing.T, target string) *freezer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{ln: ln}
	var conns []net.Conn
	var cmu sync.Mutex
	t.Cleanup(func() {
		_ = ln.Close()
		cmu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		cmu.Unlock()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			cmu.Lock()
			conns = append(conns, c, up)
			cmu.Unlock()
			frozen := make(chan struct{})
			f.mu.Lock()
			f.frozen = append(f.frozen, frozen)
			f.mu.Unlock()
			for _, p := range [][2]net.Conn{{c, up}, {up, c}} {
				go func() {
					buf := make([]byte, 32<<10)
					for {
						n, err := p[0].Read(buf)
						select {
						case <-frozen:
							<-make(chan struct{}) // stalled for good; the cleanup closes the connections
						default:
						}
						if n > 0 {
							if _, werr := p[1].Write(buf[:n]); werr != nil {
								return
							}
						}
						if err != nil {
							_ = p[1].Close()
							return
						}
					}
				}()
			}
		}
	}()
	return f
}

func (f *freezer) freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.frozen {
		close(c)
	}
	f.frozen = nil
}

// TestAnswersSilentSubscription: when the connection of a replica's
// subscription goes silent (dropped on the way, no reset: Redis still
// counts the subscriber), the replica finds out by a PING that gets no
// answer, subscribes again, and answers reach it again.
func TestAnswersSilentSubscription(t *testing.T) {
	m := miniredis.RunT(t)
	fz := newFreezer(t, m.Addr())
	logs := &syncBuffer{}
	a, err := New(Options{URL: "redis://" + fz.ln.Addr().String() + "/0", KeyPrefix: "test:", Timeout: time.Second, Key: []byte(testClusterKey),
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	a.listenCheck = 100 * time.Millisecond
	b, _ := answerStore(t, m, testClusterKey, 0)
	ctx, cancel := context.WithCancel(t.Context())
	got := make(chan string, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.ListenAnswers(ctx, func(_ string, msg []byte) { got <- string(msg) })
	}()
	defer func() { cancel(); <-done }()
	// reaches publishes answer until one is delivered, within a bound.
	reaches := func(answer string) bool {
		deadline := time.Now().Add(15 * time.Second)
		for time.Now().Before(deadline) {
			if err := b.PublishAnswer(ctx, a.Replica(), "S", []byte(answer)); err != nil && !errors.Is(err, proxy.ErrNoReplica) {
				t.Fatalf("publish: %v", err)
			}
			select {
			case d := <-got:
				if d == answer {
					return true
				}
			case <-time.After(50 * time.Millisecond):
			}
		}
		return false
	}
	if !reaches(`{"id":1,"result":{}}`) {
		t.Fatal("no answer delivered to the subscribed replica within 15s")
	}
	fz.freeze()
	if !reaches(`{"id":2,"result":{}}`) {
		t.Fatalf("no answer delivered within 15s of the subscription going silent; log:\n%s", logs)
	}
	if !strings.Contains(logs.String(), "answered no PING") {
		t.Errorf("the silent subscription was not logged:\n%s", logs)
	}
}
