package wire

import "sync/atomic"

// Memo remembers the last result of a pure function of a short byte string,
// such as the reading of a request's _meta: a client sends the same _meta
// (protocol version, capabilities, client info) with every request, and
// reading it again is most of what a 2026-07-28 request costs the proxy.
// Safe for concurrent use; a value must never be modified by its users.
type Memo[T any] struct{ last atomic.Pointer[memoEntry[T]] }

type memoEntry[T any] struct {
	key string
	val T
}

// maxMemoKey bounds the keys kept: a larger one is read every time.
const maxMemoKey = 4 << 10

// Get returns f's result for key, f(key) computed at most once in a row for
// the same bytes.
func (m *Memo[T]) Get(key []byte, f func([]byte) T) T {
	if e := m.last.Load(); e != nil && e.key == string(key) {
		return e.val
	}
	v := f(key)
	if len(key) <= maxMemoKey {
		m.last.Store(&memoEntry[T]{key: string(key), val: v})
	}
	return v
}
