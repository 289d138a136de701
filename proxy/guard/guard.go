package guard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/manifold-mcp/manifold/internal/redact"
	"github.com/manifold-mcp/manifold/policy"
)

// This file enforces the spend caps (policy.Budget) and argument limits
// (policy.ArgLimit) of tools/call: arguments are checked, and budgets
// consulted, before a call is forwarded; what a result reports it spent is
// counted when it returns. Nothing here runs for a tool without them.

// Guard holds the call-time limits of one proxy, beside policy.Decide:
// the rate limits' buckets (rate.go), the spend ledger, the secrets to
// mask (mask.go) and the labeler of results (label.go). Its methods are
// the checks before a call is sent (Refuse, RefuseRate) and the filters of
// its result (Mask, CountSpend, Label, Cap). It is safe for concurrent use.
type Guard struct {
	rates  RateStore // Options.Rates; nil: limits
	limits limiters
	ledger SpendLedger
	red    *redact.Redactor
	labels labeler // labels results as data (label.go)
}

// Options configure a Guard.
type Options struct {
	// Rates keeps the rate limits' buckets. If nil, buckets in the memory
	// of this process.
	Rates RateStore
	// Ledger records what calls spent against the policy's budgets. If
	// nil, a ledger in the memory of this process.
	Ledger SpendLedger
	// Redactor knows the secrets to mask; its secrets may change while
	// the Guard is in use (redact.Redactor.Add). If nil, one that knows
	// none.
	Redactor *redact.Redactor
}

// New returns a Guard with a fresh labeling token.
func New(opts Options) *Guard {
	g := &Guard{rates: opts.Rates, ledger: opts.Ledger, red: opts.Redactor, labels: newLabeler()}
	if g.ledger == nil {
		g.ledger = &memoryLedger{}
	}
	if g.red == nil {
		g.red = redact.New()
	}
	return g
}

// MayWait reports whether checking or counting the limits l may wait for a
// store shared by replicas (a round trip to Redis), so that the call should
// not be checked on a goroutine that must not block.
func (g *Guard) MayWait(l policy.Limits) bool {
	if !l.Rate.IsZero() && g.rates != nil {
		return true // a round trip to the shared store
	}
	if _, local := g.ledger.(*memoryLedger); len(l.Budgets) > 0 && !local {
		return true
	}
	return false
}

// Spend is one call's spend under one budget.
type Spend struct {
	At     time.Time
	Amount float64
}

// SpendLedger records spends per key (an exposed tool and one of its
// budgets) for the budgets' sliding windows. The proxy's own keeps them in
// memory, per process; one shared by replicas (internal/cluster: Redis)
// satisfies the same two methods, and returns an error wrapping
// proxy.ErrSharedUnavailable when it cannot be reached (proxy/shared.go).
// Implementations must be safe for concurrent use.
type SpendLedger interface {
	// Add records that a call under key spent amount (> 0) at t.
	Add(ctx context.Context, key string, amount float64, t time.Time) error
	// Since returns key's spends after since, oldest first (a window of
	// length w ending at now holds the spends after now-w); it may forget
	// the others.
	Since(ctx context.Context, key string, since time.Time) ([]Spend, error)
}

// memoryLedger is the SpendLedger of one process.
type memoryLedger struct {
	mu     sync.Mutex
	spends map[string][]Spend // oldest first; guarded by mu
}

func (l *memoryLedger) Add(_ context.Context, key string, amount float64, t time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.spends == nil {
		l.spends = make(map[string][]Spend)
	}
	s := l.spends[key]
	i := len(s) // keep the order when the clock steps back
	for i > 0 && s[i-1].At.After(t) {
		i--
	}
	l.spends[key] = append(s[:i], append([]Spend{{At: t, Amount: amount}}, s[i:]...)...)
	return nil
}

func (l *memoryLedger) Since(_ context.Context, key string, since time.Time) ([]Spend, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.spends[key]
	i := 0
	for i < len(s) && !s[i].At.After(since) {
		i++
	}
	if i == len(s) {
		delete(l.spends, key)
		return nil, nil
	}
	s = s[i:]
	l.spends[key] = s
	return append([]Spend(nil), s...), nil
}

// budgetKey is the ledger key of budget bu of the exposed tool name: a
// budget per tool and rule, renewed when the rule's window or pointer
// changes.
func budgetKey(name string, bu policy.Budget, who string) string {
	k := name + "\x00" + bu.Source + "\x00" + bu.Window.String() + "\x00" + bu.From.String()
	if who != "" {
		k += "\x00who\x00" + who
	}
	return k
}

// budgetState returns what spends (oldest first, all within the window
// ending now) add up to, and, when that is the limit or more, when the
// budget returns: when enough of the oldest spends have left the window for
// the rest to be under the limit.
func budgetState(spends []Spend, bu policy.Budget) (spent float64, back time.Time) {
	for _, sp := range spends {
		spent += sp.Amount
	}
	if spent < bu.Limit {
		return spent, time.Time{}
	}
	rest := spent
	for _, sp := range spends {
		rest -= sp.Amount
		if rest < bu.Limit {
			return spent, sp.At.Add(bu.Window)
		}
	}
	return spent, time.Time{} // not reached: rest ends at 0 < Limit
}

// Refuse checks a call of the exposed tool name against the argument
// limits and budgets of its decision, before it is forwarded. It returns ""
// when the call may go, else the audit outcome and the text of the isError
// result that refuses it. who is the caller's key, asked for only when a
// budget is the caller's own (Caller).
func (g *Guard) Refuse(ctx context.Context, name string, d policy.Decision, args json.RawMessage, who Caller, now time.Time) (outcome, text string) {
	l := d.Limits
	if len(l.Args) > 0 {
		v, err := decodeArgs(args)
		if err != nil {
			return "argument limit", fmt.Sprintf("argument limit: the arguments of %s could not be checked: %v; nothing was executed. Send them as one JSON object with each name once", name, err)
		}
		for _, al := range l.Args {
			if why := al.Check(v); why != "" {
				return "argument limit", fmt.Sprintf("argument limit: %s; nothing was executed. Call %s with a smaller value (for example split the work into several calls)", why, name)
			}
		}
	}
	for _, bu := range l.Budgets {
		spends, err := g.ledger.Since(ctx, budgetKey(name, bu, spendWho(bu, who)), now.Add(-bu.Window))
		if err != nil {
			return "budget unchecked", fmt.Sprintf("spend cap: %s has a budget of %s per %s (%s), and the spends shared by the replicas could not be read (%v); nothing was executed. Retry in a few seconds; if it persists, the operator should check the [cluster] Redis",
				name, policy.FormatAmount(bu.Limit), bu.Window, bu.Source, err)
		}
		spent, back := budgetState(spends, bu)
		if back.IsZero() {
			continue
		}
		return "budget spent", fmt.Sprintf("spend cap: %s has spent %s of its budget of %s per %s (counted from %s of each result; %s); nothing was executed. Budget returns at %s (in %s)",
			name, policy.FormatAmount(spent), policy.FormatAmount(bu.Limit), bu.Window, bu.From, bu.Source,
			back.UTC().Format(time.RFC3339), back.Sub(now).Round(time.Second))
	}
	return "", ""
}

// AuditSpend is one budget's line in an audit record: what the call spent
// and the window's total with it.
type AuditSpend struct {
	From   string  `json:"from"`
	Amount float64 `json:"amount"`
	Spent  float64 `json:"spent"`
	Limit  float64 `json:"limit"`
	Budget string  `json:"budget,omitempty"` // where the budget was written
}

// CountSpend counts what a raw tools/call result of the exposed tool name
// reports against each budget of d, logging to log (the server's) a result
// that reports no honest number, and returns the audit lines.
func (g *Guard) CountSpend(ctx context.Context, log *slog.Logger, name string, d policy.Decision, raw json.RawMessage, who Caller, now time.Time) []AuditSpend {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		v = nil // counted as missing
	}
	out := make([]AuditSpend, 0, len(d.Limits.Budgets))
	for _, bu := range d.Limits.Budgets {
		amount, note := bu.SpendOf(v)
		if note != "" {
			log.Warn("spend cap: "+note, "tool", name, "budget", bu.Source)
		}
		key := budgetKey(name, bu, spendWho(bu, who))
		if amount > 0 {
			// A shared ledger that cannot be reached logs so itself, once
			// per outage; the audit line's total then counts without it.
			_ = g.ledger.Add(ctx, key, amount, now)
		}
		spends, _ := g.ledger.Since(ctx, key, now.Add(-bu.Window))
		spent, _ := budgetState(spends, bu)
		out = append(out, AuditSpend{From: bu.From.String(), Amount: amount, Spent: spent, Limit: bu.Limit, Budget: bu.Source})
	}
	return out
}

// maxArgsDepth bounds the nesting of arguments that limits are checked on;
// encoding/json refuses deeper values too.
const maxArgsDepth = 10000

// decodeArgs decodes a call's raw arguments for its limits: numbers as
// json.Number, and a key that appears twice in one object refused, since
// the upstream's parser may keep the other one than the check saw. Absent
// arguments are nil.
func decodeArgs(raw json.RawMessage) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("unexpected data after the arguments")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxArgsDepth {
		return nil, fmt.Errorf("nested more than %d deep", maxArgsDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	switch tok {
	case json.Delim('{'):
		m := make(map[string]any)
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, fmt.Errorf("invalid JSON: %w", err)
			}
			k, _ := kt.(string)
			if _, dup := m[k]; dup {
				return nil, fmt.Errorf("the key %q appears twice in one object", shorten(k, 40))
			}
			if m[k], err = decodeValue(dec, depth+1); err != nil {
				return nil, err
			}
		}
		if _, err := dec.Token(); err != nil { // '}'
			return nil, fmt.Errorf("invalid JSON: %w", err)
		}
		return m, nil
	case json.Delim('['):
		a := []any{}
		for dec.More() {
			e, err := decodeValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			a = append(a, e)
		}
		if _, err := dec.Token(); err != nil { // ']'
			return nil, fmt.Errorf("invalid JSON: %w", err)
		}
		return a, nil
	}
	return tok, nil
}

// shorten shortens s to n bytes for a message, marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
