package supervise

import (
	"reflect"
	"slices"
)

// keepSame returns next with each definition that equals the one at the
// same place in prev replaced by prev's: a server that lists what it listed
// before (a live start after its cached catalog was adopted, a re-listing
// after a list_changed that changed little) gives the rebuild the very
// definitions of the last catalog, so that what the rebuild derives from
// each (exposed definitions, pin fingerprints, the registered set) is
// reused, not encoded again: with a thousand tools that is most of a start's
// second rebuild. Equal means deeply equal as decoded; a definition that
// merely encodes the same (a number decoded otherwise) counts as changed,
// which costs that reuse and nothing else.
func keepSame(prev, next Lists) Lists {
	next.Tools = keepSameDefs(prev.Tools, next.Tools)
	next.Prompts = keepSameDefs(prev.Prompts, next.Prompts)
	next.Resources = keepSameDefs(prev.Resources, next.Resources)
	next.Templates = keepSameDefs(prev.Templates, next.Templates)
	return next
}

func keepSameDefs[T any](prev, next []*T) []*T {
	if len(prev) == 0 || len(next) == 0 || &prev[0] == &next[0] {
		return next
	}
	out := next
	for i, d := range next {
		if i >= len(prev) {
			break
		}
		if p := prev[i]; p != d && p != nil && d != nil && reflect.DeepEqual(*p, *d) {
			if &out[0] == &next[0] {
				out = append([]*T(nil), next...) // next is the caller's: not changed in place
			}
			out[i] = p
		}
	}
	return out
}

// sameLists reports whether a and b hold the same definitions, by identity
// (keepSame gives a listing that lists the same the previous values).
func sameLists(a, b Lists) bool {
	return slices.Equal(a.Tools, b.Tools) && slices.Equal(a.Prompts, b.Prompts) &&
		slices.Equal(a.Resources, b.Resources) && slices.Equal(a.Templates, b.Templates)
}

// sameAbout reports whether a and b say the same of their server.
func sameAbout(a, b About) bool {
	return a.Title == b.Title && a.Name == b.Name && a.Instructions == b.Instructions &&
		a.Known == b.Known && slices.Equal(a.Tools, b.Tools)
}
