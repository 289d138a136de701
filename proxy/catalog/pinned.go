package catalog

import (
	"github.com/manifold-mcp/manifold/proxy/pin"
)

// PinReview is one definition that awaits a person's review.
type PinReview struct {
	// Kind is "tool", "prompt", "template" or "instructions"; Name the
	// server's own name (the URI template of a template, empty for
	// instructions); Exposed the name clients would see, where there is one.
	Kind    string `json:"kind"`
	Name    string `json:"name,omitempty"`
	Exposed string `json:"exposed,omitempty"`
	// Change is "new" (the lock has other definitions of the server, not
	// this one), "changed" (it has another fingerprint of it), or
	// "flagged" (first sight of the server, but Findings need a look).
	Change string `json:"change"`
	// Findings say what in the text needs a close look (pin.Finding).
	Findings []string `json:"findings,omitempty"`
	// Diff shows the change against the approved definition (pin.Diff).
	Diff string `json:"diff"`
	// Held says the definition is hidden (pin = "quarantine"); under
	// "warn" it is served and only flagged.
	Held bool `json:"held"`
	// Sum and Definition are what approving records: the fingerprint and
	// canonical form of the definition as listed. Sum is over the true
	// text; Definition has the config's secrets masked when Masked says so
	// (then Sum cannot be checked against it).
	Sum        string `json:"sum"`
	Definition string `json:"definition"`
	Masked     bool   `json:"masked,omitempty"`
}

// Approve is the command that approves r of server.
func (r PinReview) Approve(server string) string {
	if r.Kind == string(pin.Instructions) {
		return "manifold approve " + server + "/instructions"
	}
	return "manifold approve " + server + "/" + r.Name
}

// Pins is what the pin check of one rebuild found (the root's checkPins).
type Pins struct {
	Held      map[pin.Key]string // key -> the error a call or get of it gets
	Reviews   map[string][]PinReview
	HeldInstr map[string]bool
}

func (p *Pins) isHeld(server string, kind pin.Kind, name string) (string, bool) {
	msg, ok := p.Held[pin.Key{Server: server, Kind: kind, Name: name}]
	return msg, ok
}

// PinReviews returns the reviews of server in the catalog in force.
func (c *Snapshot) PinReviews(server string) []PinReview {
	if c.pin == nil {
		return nil
	}
	return c.pin.Reviews[server]
}

// HeldMessage returns the error for a call or get of a held tool or prompt
// (kind "tool" or "prompt") by exposed name.
func (c *Snapshot) HeldMessage(kind, exposed string) (string, bool) {
	msg, ok := c.pinHeld[kind+"\x00"+exposed]
	return msg, ok
}
