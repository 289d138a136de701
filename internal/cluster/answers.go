package cluster

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/manifold-mcp/manifold/proxy"
)

// The answers of legacy HTTP clients to server→client requests, carried to
// the replica that asked (proxy.AnswerRelay), on one pub/sub channel per
// replica:
//
//	PREFIX answers:REPLICA   messages: MAC(32) | len(session)(4) | session | answer
//
// MAC is HMAC-SHA256, keyed with a key derived from Options.Key, over
// REPLICA, the session and the answer: a message is accepted only from a
// replica of the same deployment, only by the replica it names, and cannot
// be altered on the way. Redis sees the answers in clear (as it sees the
// approvals' arguments): protect it as the deployment's shared state.

var _ proxy.AnswerRelay = (*Store)(nil)

// maxAnswer bounds one relayed answer when Options.MaxAnswerBytes is zero.
const maxAnswer = 4 << 20

// errNoKey is returned by PublishAnswer without Options.Key.
var errNoKey = errors.New("cluster: no [cluster] key: answers cannot be relayed between replicas; set key in [cluster]")

func (s *Store) answerChannel(replica string) string { return s.prefix + "answers:" + replica }

// Replica names this replica (proxy.AnswerRelay): 16 hex digits, made at New.
func (s *Store) Replica() string { return s.replica }

// answerMAC returns the MAC of an answer to session for replica.
func (s *Store) answerMAC(replica, session string, msg []byte) []byte {
	m := hmac.New(sha256.New, s.answerKey)
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(replica)))
	m.Write(n[:])
	m.Write([]byte(replica))
	binary.BigEndian.PutUint32(n[:], uint32(len(session)))
	m.Write(n[:])
	m.Write([]byte(session))
	m.Write(msg)
	return m.Sum(nil)
}

// PublishAnswer sends msg, the answer of session's client, to replica
// (proxy.AnswerRelay).
func (s *Store) PublishAnswer(ctx context.Context, replica, session string, msg []byte) error {
	if s.answerKey == nil {
		return errNoKey
	}
	payload := make([]byte, 0, sha256.Size+4+len(session)+len(msg))
	payload = append(payload, s.answerMAC(replica, session, msg)...)
	payload = binary.BigEndian.AppendUint32(payload, uint32(len(session)))
	payload = append(append(payload, session...), msg...)
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	n, err := s.rdb.Publish(ctx, s.answerChannel(replica), payload).Result()
	if err := s.observe(err); err != nil {
		return err
	}
	if n == 0 {
		return proxy.ErrNoReplica
	}
	return nil
}

// openAnswer checks payload, received on this replica's channel, and
// returns the session and the answer it carries.
func (s *Store) openAnswer(payload []byte) (session string, msg []byte, ok bool) {
	if len(payload) < sha256.Size+4 || len(payload) > s.maxAnswer+sha256.Size+4+1024 {
		return "", nil, false
	}
	mac, rest := payload[:sha256.Size], payload[sha256.Size:]
	n := binary.BigEndian.Uint32(rest)
	rest = rest[4:]
	if uint64(n) > uint64(len(rest)) || n > 1024 {
		return "", nil, false
	}
	session, msg = string(rest[:n]), rest[n:]
	if len(msg) > s.maxAnswer || !hmac.Equal(mac, s.answerMAC(s.replica, session, msg)) {
		return "", nil, false
	}
	return session, msg, true
}

// ListenAnswers delivers the answers published to this replica
// (proxy.AnswerRelay) until ctx ends. A message that fails the MAC or the
// size bound is dropped; the first one is logged.
func (s *Store) ListenAnswers(ctx context.Context, deliver func(session string, msg []byte)) {
	if s.answerKey == nil {
		return
	}
	var dropped atomic.Bool
	s.listen(ctx, s.answerChannel(s.replica), func(payload []byte) {
		session, answer, ok := s.openAnswer(payload)
		if !ok {
			if dropped.CompareAndSwap(false, true) {
				s.log.Warn("cluster: dropped a message on this replica's answer channel that no replica of this deployment sent (wrong MAC or size); later ones are dropped silently", "channel", s.answerChannel(s.replica))
			}
			return
		}
		deliver(session, answer)
	})
}

// listen calls handle with each message on channel, one at a time, until
// ctx ends. A subscription found dead is replaced, a second later: one that
// fails, and one that stays silent (a connection dropped on the way without
// a reset, which no read would ever report), found by a PING after
// listenCheck without a message that gets no answer within the next
// listenCheck.
func (s *Store) listen(ctx context.Context, channel string, handle func(payload []byte)) {
	for {
		s.listenOnce(ctx, channel, handle)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second): // Redis down: try again, without spinning
		}
	}
}

// listenOnce subscribes to channel and hands its messages to handle until
// ctx ends or the subscription is found dead.
func (s *Store) listenOnce(ctx context.Context, channel string, handle func(payload []byte)) {
	sctx, cancel := context.WithTimeout(ctx, s.timeout)
	ps := s.rdb.Subscribe(sctx, channel) // a failure shows at the first receive
	cancel()
	defer ps.Close()
	stop := context.AfterFunc(ctx, func() { _ = ps.Close() }) // ends a receive that waits
	defer stop()
	check := s.listenCheck
	if check <= 0 {
		check = listenCheck
	}
	pinged := false
	for {
		m, err := ps.ReceiveTimeout(ctx, check)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			var ne net.Error
			switch {
			case !errors.As(err, &ne) || !ne.Timeout():
			case !pinged:
				pctx, cancel := context.WithTimeout(ctx, s.timeout)
				err = ps.Ping(pctx)
				cancel()
				if err == nil {
					pinged = true
					continue
				}
			default:
				err = fmt.Errorf("the subscription to %s answered no PING within %s", channel, check)
			}
			_ = s.observe(err)
			return
		}
		pinged = false
		if msg, ok := m.(*redis.Message); ok { // else the subscription's confirmation, a pong
			handle([]byte(msg.Payload))
		}
	}
}

// listenCheck is how long a quiet subscription waits before it is checked
// with a PING (Store.listenCheck, if set, in tests).
const listenCheck = 5 * time.Second

// newReplicaID returns a random replica name: 16 hex digits.
func newReplicaID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// derivedKey derives the MAC key of one use (purpose) from the [cluster]
// key, apart from its other uses; nil without a key.
func derivedKey(key []byte, purpose string) []byte {
	if len(key) == 0 {
		return nil
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("manifold cluster " + purpose + " v1"))
	return m.Sum(nil)
}
