package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"slices"
	"sync/atomic"
)

// Key is one static API key, held as the SHA-256 of the key: the plain key
// is never kept.
type Key struct {
	// Name is the identity's subject for a request that presents the key.
	Name string
	// Hash is sha256(key).
	Hash [sha256.Size]byte
	// Groups are the identity's groups.
	Groups []string
}

// HashKey returns the SHA-256 of a plain key, as [Key.Hash] holds it.
func HashKey(plain string) [sha256.Size]byte { return sha256.Sum256([]byte(plain)) }

// keySet is the API keys in force, swapped whole on reload.
type keySet struct {
	keys atomic.Pointer[[]Key]
}

func (s *keySet) set(keys []Key) {
	k := slices.Clone(keys)
	s.keys.Store(&k)
}

// match returns the key whose hash is sha256(token). Every key is compared,
// in constant time, whether or not one matched already, so that the time
// taken says nothing about which key (or how much of a hash) matched.
func (s *keySet) match(token string) (Key, bool) {
	p := s.keys.Load()
	if p == nil {
		return Key{}, false
	}
	h := HashKey(token)
	found := -1
	for i := range *p {
		if subtle.ConstantTimeCompare(h[:], (*p)[i].Hash[:]) == 1 && found < 0 {
			found = i
		}
	}
	if found < 0 {
		return Key{}, false
	}
	return (*p)[found], true
}
