package observe

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/manifold-mcp/manifold/policy"
)

// TestRecordAudit: one record is one audit line, with the session as the
// caller filled it, time and duration filled here, and the arguments only
// when the options ask for them.
func TestRecordAudit(t *testing.T) {
	for _, args := range []bool{false, true} {
		var buf bytes.Buffer
		o := New(Options{Audit: &buf, AuditArguments: args})
		if !o.Records() || !o.Audits() || o.Tracing() || o.Metrics() != nil || o.MetricsHandler() != nil {
			t.Fatalf("New(audit only): Records %v Audits %v Tracing %v Metrics %v", o.Records(), o.Audits(), o.Tracing(), o.Metrics())
		}
		start := time.Date(2026, 12, 7, 20, 0, 0, 0, time.UTC)
		o.Record(Record{Method: "tools/call", Exposed: "a__echo", Client: "c", Session: "s1", Decision: "allowed", Outcome: "ok",
			Spend: []Spend{{From: "cost", Amount: 1, Spent: 2, Limit: 3}}}, start, json.RawMessage(`{"text":"hi"}`))
		lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
		if len(lines) != 1 {
			t.Fatalf("audit lines = %q, want one", lines)
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"time": "2026-12-07T20:00:00Z", "client": "c", "session": "s1", "method": "tools/call",
			"exposed": "a__echo", "decision": "allowed", "outcome": "ok", "result_bytes": 0.0,
			"spend": []any{map[string]any{"from": "cost", "amount": 1.0, "spent": 2.0, "limit": 3.0}}}
		if args {
			want["arguments"] = map[string]any{"text": "hi"}
		}
		delete(got, "duration_ms")
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("audit line (arguments %v) (-want +got):\n%s", args, diff)
		}
	}
}

// TestNilObserver: an Observer that observes nothing may be nil.
func TestNilObserver(t *testing.T) {
	var o *Observer
	if o.Records() || o.Audits() || o.Tracing() || o.Tracer() != nil || o.Metrics() != nil || o.MetricsHandler() != nil {
		t.Fatal("a nil Observer observes something")
	}
	o.Record(Record{Method: "tools/call"}, time.Now(), nil)
	o.Audit(Record{Method: "tools/call"}, time.Now(), nil)
	if err := o.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, meta, span, err := o.TraceUpstream(t.Context(), "tools/call", "echo", "a", json.RawMessage(`{}`))
	if ctx != t.Context() || string(meta) != `{}` || span != nil || err != nil {
		t.Fatalf("TraceUpstream without a tracer changed its input: %s %v %v", meta, span, err)
	}
}

func TestDecisionWordsAndErrType(t *testing.T) {
	if d, r := DecisionWords(policy.Decision{Visible: true, Rule: "allow a__*", Source: "proxy.toml"}); d != "allowed" || r != "allow a__* (proxy.toml)" {
		t.Errorf("DecisionWords(visible) = %q, %q", d, r)
	}
	if d, r := DecisionWords(policy.Decision{Rule: "deny *"}); d != "denied" || r != "deny *" {
		t.Errorf("DecisionWords(hidden) = %q, %q", d, r)
	}
	if e, c := ErrType(json.RawMessage(`{"content":[],"isError":true}`), nil); e != "tool_error" || c != 0 {
		t.Errorf("ErrType(isError) = %q, %d", e, c)
	}
	if e, _ := ErrType(json.RawMessage(`{"content":[]}`), nil); e != "" {
		t.Errorf("ErrType(ok) = %q", e)
	}
}
