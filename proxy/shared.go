package proxy

import (
	"errors"

	"github.com/manifold-mcp/manifold/proxy/confirm"
	"github.com/manifold-mcp/manifold/proxy/guard"
	"github.com/manifold-mcp/manifold/proxy/serve/streamable"
)

// This file declares the state that replicas may share (issue 16: README
// "Several replicas"): rate limits (RateStore), spend caps (SpendLedger,
// proxy/guard) and the approvals of `manifold approve-call` (ApprovalStore,
// proxy/confirm). The proxy's own implementations keep them in the memory of
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

// ApprovalStore shares the approvals of calls of clients that cannot elicit
// between replicas (proxy/confirm).
type ApprovalStore = confirm.Store

// SessionStore keeps a record of each HTTP session of the initialize era,
// so that a replica can serve a session that another created
// (proxy/serve/streamable).
type SessionStore = streamable.SessionStore
