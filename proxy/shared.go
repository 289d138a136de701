package proxy

import (
	"context"
	"errors"
	"time"

	"github.com/manifold-mcp/manifold/proxy/guard"
)

// This file declares the state that replicas may share (issue 16: README
// "Several replicas"): rate limits (RateStore), spend caps (SpendLedger,
// proxy/guard) and the approvals of `manifold approve-call` (ApprovalStore,
// confirm.go). The proxy's own implementations keep them in the memory of
// this process; internal/cluster keeps them on Redis. A store that cannot be
// reached returns an error wrapping ErrSharedUnavailable, and the proxy then
// refuses what it could not check; a store that fails open (on_error =
// "open") returns no error instead.

// ErrSharedUnavailable means a shared store (Redis) could not be reached
// within its timeout.
var ErrSharedUnavailable = errors.New("the shared store is unavailable")

// RateStore keeps the token buckets of the policy's rate limits by key
// (proxy/guard).
type RateStore = guard.RateStore

// SpendLedger records spends per key (an exposed tool and one of its
// budgets) for the budgets' sliding windows (proxy/guard).
type SpendLedger = guard.SpendLedger

// Spend is one call's spend under one budget.
type Spend = guard.Spend

// auditSpend is one budget's line in an audit record (proxy/guard).
type auditSpend = guard.AuditSpend

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
