package proxy

import (
	"context"
	"errors"
	"time"

	"github.com/manifold-mcp/manifold/policy"
)

// This file declares the state that replicas may share (issue 16: README
// "Several replicas"): rate limits (RateStore), spend caps (SpendLedger,
// guard.go) and the approvals of `manifold approve-call` (ApprovalStore,
// confirm.go). The proxy's own implementations keep them in the memory of
// this process; internal/cluster keeps them on Redis. A store that cannot be
// reached returns an error wrapping ErrSharedUnavailable, and the proxy then
// refuses what it could not check; a store that fails open (on_error =
// "open") returns no error instead.

// ErrSharedUnavailable means a shared store (Redis) could not be reached
// within its timeout.
var ErrSharedUnavailable = errors.New("the shared store is unavailable")

// RateStore keeps the token buckets of the policy's rate limits by key (an
// exposed tool, or "prompt\x00" and a prompt's name). Implementations must
// be safe for concurrent use.
type RateStore interface {
	// Take takes one token of key's bucket under rate, which holds rate.N
	// tokens and starts full, and returns zero, or how long until a call is
	// allowed again. A bucket whose rate changed starts again, full.
	Take(ctx context.Context, key string, rate policy.Rate) (time.Duration, error)
}

// ApprovalStore shares the approvals of calls of clients that cannot elicit
// (confirm.go approveByCommand) between replicas: an approval offered by
// one replica is given with `manifold approve-call` and redeemed, once, by
// whichever replica the retried call reaches. Implementations must be safe
// for concurrent use; there is no in-memory one: without a store, the
// approval folder of the process is used.
type ApprovalStore interface {
	// Offer records that approval id, shown to approve-call as view (JSON
	// of ApprovalView), waits for the call digest until expires. If one
	// already waits for digest, it is kept and its id and expiry returned.
	Offer(ctx context.Context, id, digest string, view []byte, expires time.Time) (string, time.Time, error)
	// Redeem takes the granted approval of digest, if there is one: it
	// returns its id and true at most once for each approval, across every
	// replica.
	Redeem(ctx context.Context, digest string) (string, bool, error)
}

// SessionStore keeps a record of each HTTP session of the initialize era
// (httpsession.go sessionRecord), so that a replica can serve a session that
// another created: the record names the session's owner and holds what the
// client said at initialize. Implementations must be safe for concurrent
// use. If Options.Sessions is nil, a session lives in the process that
// created it only.
type SessionStore interface {
	// PutSession records session id as record, for ttl.
	PutSession(ctx context.Context, id string, record []byte, ttl time.Duration) error
	// GetSession returns the record of id, and false when there is none
	// (it ended, expired, or never existed).
	GetSession(ctx context.Context, id string) ([]byte, bool, error)
	// TouchSession extends the life of id's record to ttl from now, and
	// reports false when there is none.
	TouchSession(ctx context.Context, id string, ttl time.Duration) (bool, error)
	// DeleteSession removes id's record: no replica serves it from then on.
	DeleteSession(ctx context.Context, id string) error
}

// Take is the RateStore of one process.
func (l *limiters) Take(_ context.Context, key string, rate policy.Rate) (time.Duration, error) {
	return l.take(key, rate, time.Now()), nil
}

// takeRate takes one token of key's bucket from the configured RateStore
// (Options.RateStore), or from this process's buckets.
func (s *Server) takeRate(ctx context.Context, key string, rate policy.Rate) (time.Duration, error) {
	if s.opts.RateStore != nil {
		return s.opts.RateStore.Take(ctx, key, rate)
	}
	return s.limits.Take(ctx, key, rate)
}
