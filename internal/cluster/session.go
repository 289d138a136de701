package cluster

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/manifold-mcp/manifold/proxy"
)

// The records of the initialize era's HTTP sessions (proxy.SessionStore),
// one key each, expiring when the session has been idle for the proxy's
// session timeout on every replica:
//
//	PREFIX session:ID   the proxy's record (JSON: owner, initialize params)

var _ proxy.SessionStore = (*Store)(nil)

func (s *Store) sessionKey(id string) string { return s.prefix + "session:" + id }

// PutSession records session id for ttl.
func (s *Store) PutSession(ctx context.Context, id string, record []byte, ttl time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return s.observe(s.rdb.Set(ctx, s.sessionKey(id), record, ttl).Err())
}

// GetSession returns the record of id, and false when there is none.
func (s *Store) GetSession(ctx context.Context, id string) ([]byte, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	rec, err := s.rdb.Get(ctx, s.sessionKey(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		_ = s.observe(err)
		return nil, false, nil
	}
	if err := s.observe(err); err != nil {
		return nil, false, err
	}
	return rec, true, nil
}

// TouchSession extends the life of id's record to ttl from now, and reports
// false when there is none.
func (s *Store) TouchSession(ctx context.Context, id string, ttl time.Duration) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	ok, err := s.rdb.PExpire(ctx, s.sessionKey(id), ttl).Result()
	if err := s.observe(err); err != nil {
		return false, err
	}
	return ok, nil
}

// DeleteSession removes id's record.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return s.observe(s.rdb.Del(ctx, s.sessionKey(id)).Err())
}
