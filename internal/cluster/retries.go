package cluster

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/manifold-mcp/manifold/proxy"
)

// The retries of 2026-07-28 calls parked on another replica
// (proxy.RetryRelay), carried on one pub/sub channel per replica, which
// carries both directions:
//
//	PREFIX retries:REPLICA   messages: MAC(32) | kind(1) | len(from)(1) | from | len(id)(1) | id | body
//
// kinds: 'c' a retry to serve, 'x' its cancellation (sent by the replica
// that forwarded it); 'r' the answer, 'b' a beat while it is being served,
// 'p' a progress notification of the call (sent by the replica that serves
// it, to the one that forwarded it). MAC
// is HMAC-SHA256, keyed with a key derived from Options.Key apart from the
// answers', over REPLICA and the rest of the message: only a replica of the
// same deployment can send one, to the replica it names, unaltered.

var _ proxy.RetryRelay = (*Store)(nil)

// Kinds of retry messages.
const (
	retryCall   = 'c'
	retryCancel = 'x'
	retryReply  = 'r'
	retryBeat   = 'b'
	retryNotify = 'p'
)

// retryBeatEvery is how often the replica that serves a retry says it still
// does (Store.retryBeat, if set, in tests); the one that forwarded it gives
// up after three without a word, and the one that serves gives up after
// three beats that no replica received.
const retryBeatEvery = 2 * time.Second

// maxRetryReply bounds a retry and the answer relayed for it: Redis
// disconnects a subscriber whose pending messages exceed 8 MB for a minute
// (its default client-output-buffer-limit for pubsub).
const maxRetryReply = 8 << 20

// retries is a Store's bookkeeping of forwarded retries.
type retries struct {
	mu      sync.Mutex
	waiting map[string]*waiter            // retries this replica forwarded, by id; guarded by mu
	serving map[string]context.CancelFunc // retries this replica serves, by from+id; guarded by mu
}

// waiter is a retry this replica forwarded, waiting for its answer.
type waiter struct {
	reply  chan []byte   // the answer; buffered 1
	events chan retryMsg // beats and progress; buffered, and dropped when full
}

type retryMsg struct {
	kind     byte
	from, id string
	body     []byte
}

func (s *Store) retryChannel(replica string) string { return s.prefix + "retries:" + replica }

// retryMAC returns the MAC of a retry message to replica.
func (s *Store) retryMAC(replica string, rest []byte) []byte {
	m := hmac.New(sha256.New, s.retryKey)
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(replica)))
	m.Write(n[:])
	m.Write([]byte(replica))
	m.Write(rest)
	return m.Sum(nil)
}

// publishRetry sends one retry message to replica and returns how many
// subscribers received it.
func (s *Store) publishRetry(ctx context.Context, replica string, m retryMsg) (int64, error) {
	rest := make([]byte, 0, 3+len(m.from)+len(m.id)+len(m.body))
	rest = append(rest, m.kind, byte(len(m.from)))
	rest = append(rest, m.from...)
	rest = append(rest, byte(len(m.id)))
	rest = append(append(rest, m.id...), m.body...)
	payload := append(s.retryMAC(replica, rest), rest...)
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	n, err := s.rdb.Publish(ctx, s.retryChannel(replica), payload).Result()
	return n, s.observe(err)
}

// openRetry checks payload, received on this replica's retry channel.
func (s *Store) openRetry(payload []byte) (retryMsg, bool) {
	if len(payload) < sha256.Size+3 || len(payload) > maxRetryReply+sha256.Size+1024 {
		return retryMsg{}, false
	}
	mac, rest := payload[:sha256.Size], payload[sha256.Size:]
	if !hmac.Equal(mac, s.retryMAC(s.replica, rest)) {
		return retryMsg{}, false
	}
	m := retryMsg{kind: rest[0]}
	n := int(rest[1])
	rest = rest[2:]
	if len(rest) < n+1 {
		return retryMsg{}, false
	}
	m.from, rest = string(rest[:n]), rest[n:]
	n = int(rest[0])
	rest = rest[1:]
	if len(rest) < n {
		return retryMsg{}, false
	}
	m.id, m.body = string(rest[:n]), rest[n:]
	return m, true
}

func (s *Store) beat() time.Duration {
	if s.retryBeat > 0 {
		return s.retryBeat
	}
	return retryBeatEvery
}

// ForwardRetry hands retry to replica and waits for its answer
// (proxy.RetryRelay).
func (s *Store) ForwardRetry(ctx context.Context, replica string, retry []byte, progress func([]byte)) ([]byte, error) {
	if s.retryKey == nil {
		return nil, errNoKey
	}
	if len(retry) > maxRetryReply {
		return nil, fmt.Errorf("cluster: a retry of %d bytes is more than the %d that replicas relay between them", len(retry), maxRetryReply)
	}
	id := newReplicaID() // as random, and as long
	w := &waiter{reply: make(chan []byte, 1), events: make(chan retryMsg, 64)}
	defer track(&s.retries.mu, &s.retries.waiting, id, w)()
	n, err := s.publishRetry(ctx, replica, retryMsg{kind: retryCall, from: s.replica, id: id, body: retry})
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, proxy.ErrNoReplica
	}
	silence := time.NewTimer(3 * s.beat())
	defer silence.Stop()
	for {
		select {
		case body := <-w.reply:
			for { // the progress that came before it, in order
				select {
				case m := <-w.events:
					if m.kind == retryNotify && progress != nil {
						progress(m.body)
					}
				default:
					return body, nil
				}
			}
		case m := <-w.events:
			if m.kind == retryNotify && progress != nil {
				progress(m.body)
			}
			silence.Reset(3 * s.beat())
		case <-silence.C:
			return nil, fmt.Errorf("%w: replica %s stopped answering about the retry it was serving", proxy.ErrNoReplica, replica)
		case <-ctx.Done():
			// Tell the replica to stop: its call is cancelled with the
			// retry, as when a client closes a retry it serves itself.
			_, _ = s.publishRetry(context.WithoutCancel(ctx), replica, retryMsg{kind: retryCancel, from: s.replica, id: id})
			return nil, ctx.Err()
		}
	}
}

// ServeRetries serves the retries forwarded to this replica, and receives
// the answers of those it forwarded (proxy.RetryRelay), until ctx ends.
func (s *Store) ServeRetries(ctx context.Context, serve func(ctx context.Context, retry []byte, notify func([]byte)) []byte) {
	if s.retryKey == nil {
		return
	}
	var dropped atomic.Bool
	var wg sync.WaitGroup
	defer wg.Wait()
	s.listen(ctx, s.retryChannel(s.replica), func(payload []byte) {
		m, ok := s.openRetry(payload)
		if !ok {
			if dropped.CompareAndSwap(false, true) {
				s.log.Warn("cluster: dropped a message on this replica's retry channel that no replica of this deployment sent (wrong MAC or size); later ones are dropped silently", "channel", s.retryChannel(s.replica))
			}
			return
		}
		switch m.kind {
		case retryCall:
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.serveRetry(ctx, m, serve)
			}()
		case retryCancel:
			s.retries.mu.Lock()
			cancel := s.retries.serving[m.from+"/"+m.id]
			s.retries.mu.Unlock()
			if cancel != nil {
				cancel()
			}
		case retryReply, retryBeat, retryNotify:
			s.retries.mu.Lock()
			w := s.retries.waiting[m.id]
			s.retries.mu.Unlock()
			if w == nil {
				return
			}
			if m.kind == retryReply {
				select {
				case w.reply <- m.body:
				default: // a second answer: the first one counts
				}
				return
			}
			select {
			case w.events <- m:
			default: // events the waiter has not read yet: progress is best effort
			}
		}
	})
}

// serveRetry serves one forwarded retry, beating while it runs, and sends
// its answer back.
func (s *Store) serveRetry(ctx context.Context, m retryMsg, serve func(ctx context.Context, retry []byte, notify func([]byte)) []byte) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer track(&s.retries.mu, &s.retries.serving, m.from+"/"+m.id, context.CancelFunc(cancel))()
	notify := func(p []byte) {
		// The forwarder's reads keep order; a notification that cannot
		// be published is lost, as progress may be.
		_, _ = s.publishRetry(ctx, m.from, retryMsg{kind: retryNotify, from: s.replica, id: m.id, body: p})
	}
	out := make(chan []byte, 1)
	go func() { out <- serve(ctx, m.body, notify) }()
	tick := time.NewTicker(s.beat())
	defer tick.Stop()
	unheard := 0
	for {
		select {
		case body := <-out:
			if body == nil {
				return // cancelled: nobody waits for it
			}
			if len(body) > maxRetryReply {
				body = []byte(`{"error":{"code":-32603,"message":"the result is larger than the 8 MiB that replicas relay between them; call the tool again (it may reach the replica that runs it)"}}`)
			}
			if n, err := s.publishRetry(context.WithoutCancel(ctx), m.from, retryMsg{kind: retryReply, from: s.replica, id: m.id, body: body}); err != nil || n == 0 {
				s.log.Warn("cluster: the answer to a retry forwarded by another replica could not be delivered (it stopped, or Redis cannot be reached)", "replica", m.from, "err", err)
			}
			return
		case <-tick.C:
			n, err := s.publishRetry(ctx, m.from, retryMsg{kind: retryBeat, from: s.replica, id: m.id})
			if err == nil && n > 0 {
				unheard = 0
				continue
			}
			if unheard++; unheard >= 3 {
				cancel() // the replica that forwarded it is gone: the retry's client with it
			}
		}
	}
}

// track puts v in *m under k, guarded by mu, and returns what removes it.
func track[V any](mu *sync.Mutex, m *map[string]V, k string, v V) (untrack func()) {
	mu.Lock()
	defer mu.Unlock()
	if *m == nil {
		*m = make(map[string]V)
	}
	(*m)[k] = v
	return func() {
		mu.Lock()
		defer mu.Unlock()
		delete(*m, k)
	}
}
