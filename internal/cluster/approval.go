package cluster

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The approvals of `manifold approve-call` (proxy.ApprovalStore), in two
// keys each:
//
//	PREFIX approval:ID       hash: digest, view (what approve-call shows)
//	PREFIX approval-for:DIG  "ID|EXPIRES_MS", then "ID|EXPIRES_MS|granted"
//
// both expiring with the approval. Redeem takes a granted one in one
// script, so that it is used once across replicas. The scripts build the
// second key from the first; that needs one Redis, not a Redis Cluster.

// ErrNoApproval means no approval with that id waits: it was used, it
// expired, or it never existed.
var ErrNoApproval = errors.New("no call waits for this approval")

var offerScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur then return cur end
local v = ARGV[1] .. '|' .. ARGV[3]
redis.call('SET', KEYS[1], v, 'PX', ARGV[4])
redis.call('HSET', KEYS[2], 'digest', ARGV[5], 'view', ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return v
`)

var redeemScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if not cur then return false end
local id, exp, g = string.match(cur, '^([^|]+)|(%d+)|?(%a*)$')
if g ~= 'granted' then return false end
redis.call('DEL', KEYS[1], ARGV[1] .. 'approval:' .. id)
return id
`)

var grantScript = redis.NewScript(`
local d = redis.call('HGET', KEYS[1], 'digest')
if not d then return 0 end
local fk = ARGV[1] .. 'approval-for:' .. d
local cur = redis.call('GET', fk)
if not cur then return 0 end
local id, exp, g = string.match(cur, '^([^|]+)|(%d+)|?(%a*)$')
if id ~= ARGV[2] then return 0 end
if g == 'granted' then return 2 end
redis.call('SET', fk, id .. '|' .. exp .. '|granted', 'KEEPTTL')
return 1
`)

// Offer records that approval id waits for the call digest until expires
// (proxy.ApprovalStore); one already waiting for digest is kept.
func (s *Store) Offer(ctx context.Context, id, digest string, view []byte, expires time.Time) (string, time.Time, error) {
	ttl := time.Until(expires).Milliseconds()
	if ttl <= 0 {
		return "", time.Time{}, fmt.Errorf("cluster: approval %s: already expired", id)
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	v, err := offerScript.Run(ctx, s.rdb, []string{s.key("approval-for", digest), s.key("approval", id)},
		id, string(view), expires.UnixMilli(), ttl, digest).Text()
	if err = s.observe(err); err != nil {
		return "", time.Time{}, err
	}
	gotID, ms, _ := strings.Cut(v, "|")
	ms, _, _ = strings.Cut(ms, "|")
	n, _ := strconv.ParseInt(ms, 10, 64)
	return gotID, time.UnixMilli(n), nil
}

// Redeem takes the granted approval of digest, once across replicas
// (proxy.ApprovalStore).
func (s *Store) Redeem(ctx context.Context, digest string) (string, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	id, err := redeemScript.Run(ctx, s.rdb, []string{s.key("approval-for", digest)}, s.prefix).Text()
	if errors.Is(err, redis.Nil) {
		return "", false, s.observe(nil)
	}
	if err = s.observe(err); err != nil {
		return "", false, err
	}
	return id, true, nil
}

// View returns what approval id shows the person (the JSON the proxy
// offered), for approve-call; ErrNoApproval when none waits.
func (s *Store) View(ctx context.Context, id string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	v, err := s.rdb.HGet(ctx, s.key("approval", id), "view").Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, ErrNoApproval
	}
	if err = s.observe(err); err != nil {
		return nil, err
	}
	return v, nil
}

// Grant approves approval id (approve-call): the next call with its digest,
// on any replica, runs once. It reports false when id was granted already,
// and ErrNoApproval when none waits.
func (s *Store) Grant(ctx context.Context, id string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	n, err := grantScript.Run(ctx, s.rdb, []string{s.key("approval", id)}, s.prefix, id).Int()
	if err = s.observe(err); err != nil {
		return false, err
	}
	switch n {
	case 0:
		return false, ErrNoApproval
	case 2:
		return false, nil
	}
	return true, nil
}

// randID returns a random member suffix.
func randID() string { return rand.Text() }
