package relay

import (
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestListedKindsOffer: a session is notified of a kind only once it listed
// it, a burst of notifications within the window is sent once, and a
// session whose first list came after the last change is not notified of
// it (a later list does not hold notifications back).
func TestListedKindsOffer(t *testing.T) {
	const window = 200 * time.Millisecond
	type offer struct {
		at   time.Duration // since the start
		sess int
		kind CatalogKind
	}
	tests := []struct {
		name   string
		listed map[int][]CatalogKind // session -> kinds it listed before the offers
		offers []offer
		relist []int       // offers just after whose change their session lists the kind again
		want   map[int]int // session -> notifications sent
	}{
		{
			name:   "nothing listed: nothing sent",
			offers: []offer{{0, 1, CatTools}, {0, 1, CatPrompts}, {0, 1, CatResources}},
			want:   map[int]int{},
		},
		{
			name:   "other kind listed: nothing sent",
			listed: map[int][]CatalogKind{1: {CatTools}},
			offers: []offer{{0, 1, CatPrompts}, {0, 1, CatResources}},
			want:   map[int]int{},
		},
		{
			name:   "a burst of six is one",
			listed: map[int][]CatalogKind{1: {CatTools}},
			offers: []offer{{0, 1, CatTools}, {10 * time.Millisecond, 1, CatTools}, {50 * time.Millisecond, 1, CatTools},
				{100 * time.Millisecond, 1, CatTools}, {150 * time.Millisecond, 1, CatTools}, {199 * time.Millisecond, 1, CatTools}},
			want: map[int]int{1: 1},
		},
		{
			name:   "two bursts are two",
			listed: map[int][]CatalogKind{1: {CatTools}},
			offers: []offer{{0, 1, CatTools}, {100 * time.Millisecond, 1, CatTools}, {time.Second, 1, CatTools}},
			want:   map[int]int{1: 2},
		},
		{
			name:   "kinds are coalesced separately",
			listed: map[int][]CatalogKind{1: {CatTools, CatPrompts, CatResources}},
			offers: []offer{{0, 1, CatTools}, {0, 1, CatPrompts}, {0, 1, CatResources}, {0, 1, CatTools}},
			want:   map[int]int{1: 3},
		},
		{
			name:   "sessions are separate",
			listed: map[int][]CatalogKind{1: {CatTools}, 2: {CatTools}},
			offers: []offer{{0, 1, CatTools}, {0, 2, CatTools}, {0, 3, CatTools}, {0, 1, CatTools}},
			want:   map[int]int{1: 1, 2: 1},
		},
		{
			name:   "listed after the change: nothing sent",
			listed: map[int][]CatalogKind{1: {CatTools}},
			offers: []offer{{0, 1, CatTools}},
			relist: []int{0},
			want:   map[int]int{},
		},
		{
			name:   "a list after the first one holds nothing back",
			listed: map[int][]CatalogKind{1: {CatTools}},
			offers: []offer{{0, 1, CatTools}, {time.Second, 1, CatTools}},
			relist: []int{0, 1},
			want:   map[int]int{1: 1},
		},
		{
			name:   "a change after the list is sent",
			listed: map[int][]CatalogKind{1: {CatTools}},
			offers: []offer{{0, 1, CatTools}, {50 * time.Millisecond, 1, CatTools}},
			relist: []int{0},
			want:   map[int]int{1: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var l listedKinds
				sessions := map[int]*mcp.ServerSession{1: {}, 2: {}, 3: {}}
				for s, kinds := range tt.listed {
					for _, k := range kinds {
						l.listed(sessions[s], k)
					}
				}
				var mu sync.Mutex
				got := map[int]int{}
				start := time.Now()
				for i, o := range tt.offers {
					time.Sleep(o.at - time.Since(start))
					l.changed(o.kind) // the SDK notifies after a change
					if slices.Contains(tt.relist, i) {
						l.saw(sessions[o.sess], o.kind)
					}
					l.offer(sessions[o.sess], o.kind, window, func() {
						mu.Lock()
						got[o.sess]++
						mu.Unlock()
					})
				}
				time.Sleep(10 * window)
				synctest.Wait()
				mu.Lock()
				defer mu.Unlock()
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("notifications sent per session (-want +got):\n%s", diff)
				}
			})
		})
	}
}
