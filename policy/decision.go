package policy

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Decision is the outcome of [Rules.Decide]. Its String method explains it.
type Decision struct {
	// Visible says that the item is listed and may be called, read or got.
	// A hidden item is neither: it does not exist for the caller.
	Visible bool

	// Rule names the rule that decided (`servers.files.tools.deny "write_*"`,
	// "read_only", `rule "no_writes"`) and Source where it was written
	// ("file:line", empty when unknown). A visible item has a Rule only when
	// a policy file rule allowed it over a less specific deny, or alone.
	Rule, Source string

	// Reason, for a hidden item, says why in words: the policy file rule's
	// reason, or what read-only mode found; it may be empty. It is fit for an
	// error message to a client.
	Reason string

	// ReadOnly says that a visible tool passed read-only mode; ReadOnlyFrom
	// says where its readOnlyHint came from ("upstream annotations",
	// "override at proxy.toml:20").
	ReadOnly     bool
	ReadOnlyFrom string

	// Limits apply to calls of a visible item.
	Limits Limits

	// Confirm says that a call of a visible tool waits for a person's
	// approval of its exact arguments; ConfirmRule and ConfirmSource name
	// what asked for it (`servers.files.confirm`, `rule "pay"`) and where,
	// and ConfirmReason is its reason, shown to the person (it may be
	// empty). A tool that needs approval stays listed.
	Confirm                    bool
	ConfirmRule, ConfirmSource string
	ConfirmReason              string

	// Label says that the text results of a visible tool or resource are
	// labelled as data (label_results); LabelSource says where that was set.
	Label       bool
	LabelSource string
}

// Confirmation is one request of approval before a call ([Rules.Decide]
// sets the Decision's Confirm fields from the first one that applies).
type Confirmation struct {
	Confirm bool
	Reason  string
	Source  string
}

// Limits bound the calls to one item. A zero field is no limit (the
// server's and proxy's own settings still apply); each Source field says
// which policy file line set the limit.
type Limits struct {
	CallTimeout          time.Duration
	CallTimeoutSource    string
	MaxResultBytes       int
	MaxResultBytesSource string
	// Rate is enforced per exposed item, and per identity unless
	// RateShared (per = "all").
	Rate       Rate
	RateSource string
	RateShared bool
	// Budgets and Args are every matching rule's spend cap and argument
	// limits, each enforced on its own (a budget per exposed tool and
	// rule); each carries its source.
	Budgets []Budget
	Args    []ArgLimit
}

// add tightens l with the limits of fr.
func (l *Limits) add(fr *Rule) {
	if fr.CallTimeout > 0 && (l.CallTimeout == 0 || fr.CallTimeout < l.CallTimeout) {
		l.CallTimeout, l.CallTimeoutSource = fr.CallTimeout, fr.Source
	}
	if fr.MaxResultBytes > 0 && (l.MaxResultBytes == 0 || fr.MaxResultBytes < l.MaxResultBytes) {
		l.MaxResultBytes, l.MaxResultBytesSource = fr.MaxResultBytes, fr.Source
	}
	if !fr.Rate.IsZero() && (l.Rate.IsZero() || fr.Rate.stricter(l.Rate)) {
		l.Rate, l.RateSource, l.RateShared = fr.Rate, fr.Source, fr.Shared
	}
	if !fr.Budget.IsZero() {
		b := fr.Budget
		b.Shared = fr.Shared
		l.Budgets = append(l.Budgets, b)
	}
	l.Args = append(l.Args, fr.Args...)
}

// String explains d in one line, for `manifold explain` and logs:
//
//	hidden: servers.files.tools.deny "write_*" (proxy.toml:12)
//	hidden: rule "no_writes" (policy/base.toml:7): writes need review
//	exposed; read-only (readOnlyHint from override at proxy.toml:20); rate 30/minute (policy/base.toml:12)
//	exposed by rule "log_writes" (policy/base.toml:11)
//	exposed; needs a person's approval per call (rule "pay" at policy/base.toml:3): moves money
func (d Decision) String() string {
	var b strings.Builder
	if !d.Visible {
		b.WriteString("hidden: ")
		b.WriteString(d.Rule)
		source(&b, d.Source)
		if d.Reason != "" {
			b.WriteString(": ")
			b.WriteString(d.Reason)
		}
		return b.String()
	}
	b.WriteString("exposed")
	if d.Rule != "" {
		b.WriteString(" by " + d.Rule)
		source(&b, d.Source)
	}
	if d.ReadOnly {
		b.WriteString("; read-only (readOnlyHint from ")
		b.WriteString(d.ReadOnlyFrom)
		b.WriteString(")")
	}
	l := d.Limits
	if l.CallTimeout > 0 {
		b.WriteString("; call_timeout " + l.CallTimeout.String())
		source(&b, l.CallTimeoutSource)
	}
	if l.MaxResultBytes > 0 {
		b.WriteString("; max_result_bytes " + strconv.Itoa(l.MaxResultBytes))
		source(&b, l.MaxResultBytesSource)
	}
	if !l.Rate.IsZero() {
		b.WriteString("; rate " + l.Rate.String())
		if l.RateShared {
			b.WriteString(" shared by all callers")
		}
		source(&b, l.RateSource)
	}
	for _, bu := range l.Budgets {
		b.WriteString("; budget " + bu.String())
		source(&b, bu.Source)
	}
	for _, a := range l.Args {
		b.WriteString("; " + a.String())
		source(&b, a.Source)
	}
	if d.Label {
		b.WriteString("; results labelled as data")
		source(&b, d.LabelSource)
	}
	if d.Confirm {
		b.WriteString("; needs a person's approval per call (" + d.ConfirmRule)
		if d.ConfirmSource != "" {
			b.WriteString(" at " + d.ConfirmSource)
		}
		b.WriteString(")")
		if d.ConfirmReason != "" {
			b.WriteString(": " + d.ConfirmReason)
		}
	}
	return b.String()
}

func source(b *strings.Builder, s string) {
	if s != "" {
		fmt.Fprintf(b, " (%s)", s)
	}
}
