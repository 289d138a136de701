package bridge

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/proxy/era"
)

// TestStepsLeaveOtherCallsAlone: what the pipeline asks of the bridge
// leaves a call that does not span eras as it is: a legacy client's call is
// never parked, sealed or resumed (its requestState and inputResponses are
// dropped), and a modern client's call on a modern server is not parked; a
// modern client's call on a legacy server and its retry are.
func TestStepsLeaveOtherCallsAlone(t *testing.T) {
	br := New(Options{StateKey: []byte(strings.Repeat("k", 32))})
	legacy := era.Request{Caps: elicitCaps()}
	modern := era.Request{Modern: true, Caps: elicitCaps()}
	ctx := t.Context()
	never := func(json.RawMessage, error) { t.Error("a call the bridge leaves alone was answered") }
	ss := &mcp.ServerSession{}

	fields := map[string]json.RawMessage{"requestState": json.RawMessage(`"x"`), "inputResponses": json.RawMessage(`{}`), "arguments": json.RawMessage(`{}`)}
	if br.Retried(ctx, ss, legacy, "fx__ask", "fx", fields, never) || len(fields) != 1 || fields["arguments"] == nil {
		t.Errorf("a legacy client's retry fields: handled, or left %v; want them dropped", fields)
	}
	if br.Retried(ctx, ss, modern, "fx__ask", "fx", map[string]json.RawMessage{"arguments": json.RawMessage(`{}`)}, never) {
		t.Error("a modern client's call without requestState was handled as a retry")
	}

	if c, pc, err := br.ForApproval(ctx, legacy, testBind, time.Minute, never); c != ctx || pc != nil || err != nil {
		t.Errorf("ForApproval of a legacy client's call = %v, %v, %v; want ctx as it was", c, pc, err)
	}
	for _, tc := range []struct {
		name     string
		e        era.Request
		ss       *mcp.ServerSession
		upModern bool
		bridged  bool
	}{
		{name: "legacy client", e: legacy, ss: ss},
		{name: "modern server", e: modern, ss: ss, upModern: true},
		{name: "no session", e: modern},
		{name: "modern client, legacy server", e: modern, ss: ss, bridged: true},
	} {
		callCtx, pc, bridged, err := br.OnLegacy(ctx, ctx, tc.ss, tc.e, tc.upModern, "fx", testBind, time.Minute, nil, func(json.RawMessage, error) {})
		if err != nil || bridged != tc.bridged || (pc != nil) != tc.bridged || !tc.bridged && callCtx != ctx {
			t.Errorf("%s: OnLegacy = %v, %v, %v; want bridged %v", tc.name, pc, bridged, err, tc.bridged)
		}
		if pc != nil {
			pc.Finish(json.RawMessage(`{}`), nil)
		}
		if got := MayWait(tc.e, map[string]json.RawMessage{}, tc.upModern); got != (tc.e.Modern && !tc.upModern) {
			t.Errorf("%s: MayWait = %v", tc.name, got)
		}
	}
	if !MayWait(modern, map[string]json.RawMessage{"requestState": json.RawMessage(`"x"`)}, true) {
		t.Error("a modern client's retry on a modern server: MayWait false, want true (a parked call may be resumed)")
	}

	ir := json.RawMessage(`{"resultType":"input_required","requestState":"s","inputRequests":{}}`)
	if !AsksInput(legacy, ss, ir) || AsksInput(modern, ss, ir) || AsksInput(legacy, nil, ir) || AsksInput(legacy, ss, json.RawMessage(`{"content":[]}`)) {
		t.Error("AsksInput: want true only for a legacy client with a session, of a result that says input_required")
	}
	if out, err := br.Seal(ir, legacy, testBind, time.Minute); err != nil || string(out) != string(ir) {
		t.Errorf("Seal for a legacy client = %s, %v; want the result as it was", out, err)
	}
	out, err := br.Seal(ir, modern, testBind, time.Minute)
	var got struct {
		RequestState string `json:"requestState"`
	}
	if err != nil || json.Unmarshal(out, &got) != nil || !strings.HasPrefix(got.RequestState, "mf1.") {
		t.Errorf("Seal for a modern client = %s, %v; want the server's state sealed", out, err)
	}
}
