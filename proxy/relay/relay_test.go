package relay

import (
	"strings"
	"testing"
)

// TestOfferRefusalSaysWhere: a refusal for a capability the client did not
// declare says where the client declares it, in its era: initialize, or a
// 2026-07-28 request's _meta.
func TestOfferRefusalSaysWhere(t *testing.T) {
	b := fakeBackend{name: "alpha"}
	for _, tc := range []struct {
		o    offer
		want string
	}{
		{offer{}, "capability in initialize"},
		{offer{modern: true}, "in the _meta clientCapabilities"},
		{offer{why: "shared"}, ": shared"},
	} {
		err := tc.o.refusal(b, "sampling/createMessage")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `"alpha"`) {
			t.Errorf("refusal of %+v = %v, want it to say %q", tc.o, err, tc.want)
		}
		if tc.o.modern && strings.Contains(err.Error(), "initialize") {
			t.Errorf("a modern client is told about initialize: %v", err)
		}
	}
}

// fakeBackend is a Backend with a name, for what reads only the name.
type fakeBackend struct {
	Backend
	name string
}

func (b fakeBackend) Name() string { return b.name }
