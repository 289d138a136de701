package confirm

import (
	"context"
	"time"
)

// What replicas share of approvals (proxy/shared.go: internal/cluster keeps
// it on Redis). A store that cannot be reached returns an error wrapping
// proxy.ErrSharedUnavailable; an approval never fails open.

// Store shares the approvals of calls of clients that cannot elicit
// (approveByCommand) between replicas: an approval offered by
// one replica is given with `manifold approve-call` and redeemed, once, by
// whichever replica the retried call reaches. Implementations must be safe
// for concurrent use; there is no in-memory one: without a store, the
// approval folder of the process is used.
type Store interface {
	// Offer records that approval id, shown to approve-call as view (JSON
	// of View), waits for the call digest until expires. If one
	// already waits for digest, it is kept and its id and expiry returned.
	Offer(ctx context.Context, id, digest string, view []byte, expires time.Time) (string, time.Time, error)
	// Redeem takes the granted approval of digest, if there is one: it
	// returns its id and true at most once for each approval, across every
	// replica.
	Redeem(ctx context.Context, digest string) (string, bool, error)
}
