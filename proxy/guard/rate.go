package guard

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/manifold-mcp/manifold/policy"
)

// This file holds the policy's rate limits: a token bucket per exposed item
// (and caller), in this process (limiters) or in a store shared by replicas
// (RateStore, proxy/shared.go: internal/cluster keeps it on Redis).

// RateStore keeps the token buckets of the policy's rate limits by key (an
// exposed tool, or "prompt\x00" and a prompt's name). Implementations must
// be safe for concurrent use.
type RateStore interface {
	// Take takes one token of key's bucket under rate, which holds rate.N
	// tokens and starts full, and returns zero, or how long until a call is
	// allowed again. A bucket whose rate changed starts again, full.
	Take(ctx context.Context, key string, rate policy.Rate) (time.Duration, error)
}

// Caller returns the key of the caller that a rate or a budget is counted
// for: "" for an anonymous caller, who shares the item's bucket. It is
// called only for an item with a rate or a budget of its own per caller, so
// that a call without one computes no key.
type Caller func() string

// limiters holds one token bucket per exposed tool with a rate limit.
type limiters struct {
	mu      sync.Mutex
	buckets map[string]*bucket // guarded by mu
}

type bucket struct {
	rate   policy.Rate
	tokens float64
	last   time.Time
}

// take takes one token for name under rate, and returns zero, or how long
// until a call is allowed again.
func (l *limiters) take(name string, rate policy.Rate, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buckets == nil {
		l.buckets = make(map[string]*bucket)
	}
	b := l.buckets[name]
	if b == nil || b.rate != rate {
		b = &bucket{rate: rate, tokens: float64(rate.N), last: now}
		l.buckets[name] = b
	}
	perToken := float64(rate.Per) / float64(rate.N)
	b.tokens = math.Min(float64(rate.N), b.tokens+float64(now.Sub(b.last))/perToken)
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return 0
	}
	return time.Duration((1 - b.tokens) * perToken)
}

// Take is the RateStore of one process.
func (l *limiters) Take(_ context.Context, key string, rate policy.Rate) (time.Duration, error) {
	return l.take(key, rate, time.Now()), nil
}

// TakeRate takes one token of the bucket of item (an exposed tool, or
// "prompt\x00" and a prompt's name) under the rate of l for the caller who,
// from the configured RateStore (Options.Rates), or from this process's
// buckets. It returns zero, or how long until a call is allowed again.
func (g *Guard) TakeRate(ctx context.Context, item string, l policy.Limits, who Caller) (time.Duration, error) {
	key := rateKey(item, l, who)
	if g.rates != nil {
		return g.rates.Take(ctx, key, l.Rate)
	}
	return g.limits.Take(ctx, key, l.Rate)
}

// RefuseRate takes one token of the rate limit of a call of the exposed
// tool name, if its limits l have one. It returns "" when the call may go,
// else the audit outcome and the text of the isError result that refuses
// it.
func (g *Guard) RefuseRate(ctx context.Context, name string, l policy.Limits, who Caller) (outcome, text string) {
	r := l.Rate
	if r.IsZero() {
		return "", ""
	}
	wait, err := g.TakeRate(ctx, name, l, who)
	if err != nil {
		return "rate limit unchecked", fmt.Sprintf("rate limit: %s allows %s (%s), and the count shared by the replicas could not be checked (%v); nothing was executed. Retry in a few seconds; if it persists, the operator should check the [cluster] Redis",
			name, r, l.RateSource, err)
	}
	if wait > 0 {
		return "rate limited", fmt.Sprintf("rate limit: %s allows %s (%s); nothing was executed. Retry in %s",
			name, r, l.RateSource, (wait + time.Millisecond).Round(time.Second/10))
	}
	return "", ""
}

// rateKey is the bucket of a rate limit of item for the caller who: the
// item's own for anonymous callers and for a rate shared by all (per =
// "all"), else the item's and the identity's.
func rateKey(item string, l policy.Limits, who Caller) string {
	if l.RateShared || who == nil {
		return item
	}
	if k := who(); k != "" {
		return item + "\x00who\x00" + k
	}
	return item
}

// spendWho is the identity part of a budget's key for the caller who: ""
// for anonymous callers and a budget shared by all.
func spendWho(bu policy.Budget, who Caller) string {
	if bu.Shared || who == nil {
		return ""
	}
	return who()
}
