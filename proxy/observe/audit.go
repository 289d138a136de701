package observe

import (
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/manifold-mcp/manifold/internal/redact"
	"github.com/manifold-mcp/manifold/policy"
)

// auditor writes one JSON line per call, resource read and prompt get.
type auditor struct {
	mu   sync.Mutex
	w    io.Writer // guarded by mu
	args bool      // log argument values (redacted)
}

// Record is one audit line, and what the metrics count of a request. Field
// names are part of the documented format (README, "Audit log").
type Record struct {
	Time        string         `json:"time"`
	Client      string         `json:"client,omitempty"`
	Identity    string         `json:"identity,omitempty"` // the authenticated subject (HTTP with authentication)
	Session     string         `json:"session,omitempty"`
	Method      string         `json:"method"`
	Exposed     string         `json:"exposed,omitempty"`
	Original    string         `json:"original,omitempty"`
	Server      string         `json:"server,omitempty"`
	Decision    string         `json:"decision"`
	Rule        string         `json:"rule,omitempty"`
	DurationMS  float64        `json:"duration_ms"`
	Outcome     string         `json:"outcome"`
	Error       string         `json:"error,omitempty"`
	ResultBytes int            `json:"result_bytes"`
	Rounds      int            `json:"input_rounds,omitempty"` // input_required rounds of a bridged call
	Via         string         `json:"via,omitempty"`          // the call tool of the search surface that made the call
	Catalog     string         `json:"catalog,omitempty"`      // the client's catalog mode: full or search
	Confirm     string         `json:"confirm,omitempty"`      // a person's approval: accepted, declined, expired, timeout, unavailable (proxy/confirm)
	Approval    string         `json:"approval,omitempty"`     // the approval's id
	Arguments   map[string]any `json:"arguments,omitempty"`
	Spend       []Spend        `json:"spend,omitempty"` // what the call spent against each budget (proxy/guard.go)
}

// Spend is one budget's line in an audit record: what the call spent
// and the window's total with it.
type Spend struct {
	From   string  `json:"from"`
	Amount float64 `json:"amount"`
	Spent  float64 `json:"spent"`
	Limit  float64 `json:"limit"`
	Budget string  `json:"budget,omitempty"` // where the budget was written
}

// record writes rec, filling time and arguments. The caller fills what
// rec says of the session (Session, Client).
func (a *auditor) record(rec Record, start time.Time, args json.RawMessage) {
	if a == nil {
		return
	}
	rec.Time = start.UTC().Format(time.RFC3339Nano)
	rec.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	if a.args && len(args) > 0 {
		var m map[string]any
		if json.Unmarshal(args, &m) == nil {
			rec.Arguments = redact.Args(m)
		}
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	_, _ = a.w.Write(append(line, '\n'))
}

// DecisionWords renders a decision for the audit line: the decision and
// the rule that made it.
func DecisionWords(d policy.Decision) (string, string) {
	rule := d.Rule
	if d.Source != "" {
		rule += " (" + d.Source + ")"
	}
	if d.Visible {
		return "allowed", rule
	}
	return "denied", rule
}
