// Package cluster keeps the little state that Manifold replicas share on
// Redis — rate-limit buckets, spend ledgers and the approvals of
// `manifold approve-call` — as implementations of the interfaces package
// proxy declares (proxy.RateStore, proxy.SpendLedger, proxy.ApprovalStore).
// It must not route, decide policy or know the config file: it counts and
// stores what the proxy asks, and says when Redis cannot be reached.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/manifold-mcp/manifold/internal/redact"
	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/proxy"
)

// Options configures a Store.
type Options struct {
	// URL is the redis:// or rediss:// URL of the store (required).
	URL string
	// KeyPrefix starts every key the store writes, so that deployments can
	// share one Redis. If empty, "manifold:".
	KeyPrefix string
	// FailOpen admits, while Redis cannot be reached, what the rate limits
	// and spend caps cannot check. If false, the proxy refuses it. Approvals
	// never fail open.
	FailOpen bool
	// Timeout bounds one operation, connecting included. If zero, 250ms.
	Timeout time.Duration
	// Logger receives one line when Redis becomes unreachable and one when
	// it is back. If nil, nothing is logged.
	Logger *slog.Logger
	// Key is the [cluster] key, the same on every replica: the answers and
	// retries relayed between replicas (answers.go, retries.go) are
	// authenticated with keys derived from it. If empty, none is relayed.
	Key []byte
	// MaxAnswerBytes bounds one relayed answer, as http.max_body_bytes
	// bounds the POST that carried it. If zero, 4 MiB.
	MaxAnswerBytes int
}

// Store is the shared state on one Redis. Its methods are safe for
// concurrent use.
type Store struct {
	rdb      *redis.Client
	prefix   string
	failOpen bool
	timeout  time.Duration
	log      *slog.Logger
	addr     string // for the log: host:port, never the password

	replica     string // this replica's name (answers.go)
	answerKey   []byte // the MAC key of relayed answers; nil: none are relayed
	maxAnswer   int
	listenCheck time.Duration // if set, in place of listenCheck (answers.go)
	retryKey    []byte        // the MAC key of forwarded retries (retries.go); nil: none are forwarded
	retryBeat   time.Duration // if set, in place of retryBeatEvery (retries.go)
	retries     retries

	mu   sync.Mutex
	down bool // guarded by mu; the last operation could not reach Redis
}

var (
	_ proxy.RateStore     = (*Store)(nil)
	_ proxy.SpendLedger   = (*Store)(nil)
	_ proxy.ApprovalStore = (*Store)(nil)
)

// New returns a Store for opts.URL. It does not connect: the first
// operation does, and Ping checks.
func New(opts Options) (*Store, error) {
	ro, err := redis.ParseURL(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("cluster: redis URL %s: %w", redact.URL(opts.URL), err)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 250 * time.Millisecond
	}
	if opts.KeyPrefix == "" {
		opts.KeyPrefix = "manifold:"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ro.DialTimeout, ro.ReadTimeout, ro.WriteTimeout = opts.Timeout, opts.Timeout, opts.Timeout
	ro.ContextTimeoutEnabled = true
	ro.MaxRetries = 1    // within the timeout: a retry after a restart of Redis finds a new connection
	ro.DialerRetries = 1 // a refused connection is an answer: Redis is down
	ro.DisableIdentity = true
	if opts.MaxAnswerBytes <= 0 {
		opts.MaxAnswerBytes = maxAnswer
	}
	return &Store{rdb: redis.NewClient(ro), prefix: opts.KeyPrefix, failOpen: opts.FailOpen, timeout: opts.Timeout,
		log: opts.Logger, addr: ro.Addr, replica: newReplicaID(), answerKey: derivedKey(opts.Key, "answers"), maxAnswer: opts.MaxAnswerBytes,
		retryKey: derivedKey(opts.Key, "retries")}, nil
}

// Close closes the connections.
func (s *Store) Close() error { return s.rdb.Close() }

// Ping checks that Redis answers within the timeout.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return s.observe(s.rdb.Ping(ctx).Err())
}

// observe records whether err says Redis could not be reached, logging the
// transitions only, and returns err wrapped in proxy.ErrSharedUnavailable
// when it did.
func (s *Store) observe(err error) error {
	reachable := err == nil || errors.Is(err, redis.Nil) || isRedisReply(err)
	s.mu.Lock()
	changed := s.down == reachable
	s.down = !reachable
	s.mu.Unlock()
	if changed && reachable {
		s.log.Info("cluster: Redis is reachable again; rate limits, spend caps and approvals are shared again", "redis", s.addr)
	}
	if reachable {
		return err
	}
	if changed {
		mode := `refused (on_error = "closed")`
		if s.failOpen {
			mode = `admitted unchecked (on_error = "open"); approvals are refused`
		}
		s.log.Error("cluster: Redis cannot be reached; calls with rate limits or spend caps are "+mode+" until it is back", "redis", s.addr, "err", err)
	}
	return fmt.Errorf("%w: Redis at %s: %v", proxy.ErrSharedUnavailable, s.addr, shortErr(err))
}

// isRedisReply reports whether err is an error reply of the server (a
// script error, a wrong type): Redis answered.
func isRedisReply(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	var ne net.Error
	return !errors.As(err, &ne)
}

// shortErr renders err for a tool result: the deadline, or the error.
func shortErr(err error) string {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return "no answer in time"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "no answer in time"
	}
	return err.Error()
}

// open reports whether an error of an operation is to be ignored.
func (s *Store) open(err error) bool {
	return s.failOpen && errors.Is(err, proxy.ErrSharedUnavailable)
}

func (s *Store) key(kind, k string) string { return s.prefix + kind + ":" + k }

// takeScript is a token bucket as GCRA on Redis's own clock: KEYS[1] holds
// the theoretical arrival time (TAT, µs); ARGV[1] is the interval between
// tokens and ARGV[2] the period (N tokens), both in µs. It returns 0 when a
// token was taken, else the µs until one is.
var takeScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local period = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local next = tat + interval
local wait = next - period - now
if wait > 0 then return wait end
redis.call('SET', KEYS[1], string.format('%.0f', next), 'PX', math.ceil((next - now) / 1000) + 1000)
return 0
`)

// Take takes one token of key's bucket under rate (proxy.RateStore). A
// bucket is keyed by its rate too, so that a changed rate starts full.
func (s *Store) Take(ctx context.Context, key string, rate policy.Rate) (time.Duration, error) {
	if rate.N <= 0 || rate.Per <= 0 {
		return 0, nil
	}
	interval := rate.Per.Microseconds() / int64(rate.N)
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	k := s.key("rate", strconv.Itoa(rate.N)+"/"+rate.Per.String()+":"+key)
	wait, err := takeScript.Run(ctx, s.rdb, []string{k}, max(interval, 1), rate.Per.Microseconds()).Int64()
	if err = s.observe(err); err != nil {
		if s.open(err) {
			return 0, nil
		}
		return 0, err
	}
	return time.Duration(wait) * time.Microsecond, nil
}

// addScript records a spend at Redis's clock: KEYS[1] is a sorted set of
// "amount|id" members scored by µs.
var addScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('ZADD', KEYS[1], string.format('%.0f', now), ARGV[1])
if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 1
`)

// sinceScript drops the spends older than ARGV[1] µs before Redis's now and
// returns now and the rest, oldest first, with their scores.
var sinceScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local cutoff = now - tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%.0f', cutoff))
redis.call('PEXPIRE', KEYS[1], math.ceil(tonumber(ARGV[1]) / 1000) + 60000)
local out = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
table.insert(out, 1, string.format('%.0f', now))
return out
`)

// defaultSpendTTL keeps a ledger key that Since never read again.
const defaultSpendTTL = 31 * 24 * time.Hour

// Add records a spend (proxy.SpendLedger) at Redis's time; t, the proxy's
// clock, is not used, so that replicas' clocks do not matter.
func (s *Store) Add(ctx context.Context, key string, amount float64, _ time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	member := strconv.FormatFloat(amount, 'g', -1, 64) + "|" + randID()
	err := s.observe(addScript.Run(ctx, s.rdb, []string{s.key("spend", key)}, member, defaultSpendTTL.Milliseconds()).Err())
	if s.open(err) {
		return nil
	}
	return err
}

// Since returns key's spends after since (proxy.SpendLedger): the window
// since..now is applied to Redis's clock, and the times returned are on
// this process's clock.
func (s *Store) Since(ctx context.Context, key string, since time.Time) ([]proxy.Spend, error) {
	localNow := time.Now()
	window := localNow.Sub(since)
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	out, err := sinceScript.Run(ctx, s.rdb, []string{s.key("spend", key)}, max(window.Microseconds(), 0)).StringSlice()
	if err = s.observe(err); err != nil {
		if s.open(err) {
			return nil, nil
		}
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("cluster: spend ledger %q: empty reply", key)
	}
	serverNow, _ := strconv.ParseInt(out[0], 10, 64)
	var spends []proxy.Spend
	for i := 1; i+1 < len(out); i += 2 {
		amount, err := strconv.ParseFloat(strings.SplitN(out[i], "|", 2)[0], 64)
		if err != nil {
			continue // not written by Add
		}
		at, _ := strconv.ParseFloat(out[i+1], 64)
		age := time.Duration(serverNow-int64(at)) * time.Microsecond
		spends = append(spends, proxy.Spend{At: localNow.Add(-age), Amount: amount})
	}
	return spends, nil
}
