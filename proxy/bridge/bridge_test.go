//lint:file-ignore SA1019 sampling and roots are deprecated as of protocol 2026-07-28, and bridging them is what is tested.

package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/proxy/era"
)

var testBind = era.Binding{Method: "tools/call", Name: "fx__ask", Upstream: "fx", Principal: "anonymous:t/1"}

// outcomes collects what a parked call delivers to its requests.
type outcomes chan callOutcome

func (o outcomes) finish(raw json.RawMessage, err error) { o <- callOutcome{raw, err} }

func elicitCaps() *mcp.ClientCapabilities {
	return &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}
}

// A call whose state is never used is freed after the TTL: the upstream call
// is cancelled and the registry forgets it.
func TestParkedFreedAfterTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Options{})
		out := make(outcomes, 4)
		callCtx, pc, err := s.Park(t.Context(), testBind, elicitCaps(), time.Minute, out.finish)
		if err != nil {
			t.Fatal(err)
		}
		asked := make(chan error, 1)
		go func() {
			_, err := pc.Ask(callCtx, "elicitation/create", "form", &mcp.ElicitParams{Message: "?"})
			asked <- err
		}()
		o := <-out
		if o.err != nil || !json.Valid(o.raw) {
			t.Fatalf("first round: %s, %v", o.raw, o.err)
		}
		var ir struct {
			ResultType    string                     `json:"resultType"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
			RequestState  string                     `json:"requestState"`
		}
		if err := json.Unmarshal(o.raw, &ir); err != nil || ir.ResultType != "input_required" || len(ir.InputRequests) != 1 || ir.RequestState == "" {
			t.Fatalf("first round = %s, want input_required with one request and a state", o.raw)
		}
		if n := s.Count(); n != 1 {
			t.Fatalf("parked calls = %d, want 1", n)
		}
		time.Sleep(time.Minute - time.Second)
		synctest.Wait()
		if callCtx.Err() != nil || s.Count() != 1 {
			t.Fatalf("before the TTL: call ctx %v, parked %d; want alive and 1", callCtx.Err(), s.Count())
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if callCtx.Err() == nil {
			t.Error("after the TTL the upstream call was not cancelled")
		}
		if n := s.Count(); n != 0 {
			t.Errorf("after the TTL parked calls = %d, want 0", n)
		}
		if err := <-asked; !errors.Is(err, context.Canceled) {
			t.Errorf("the upstream's request ended with %v, want context.Canceled", err)
		}
	})
}

// The registry holds at most its bound; a request of a call beyond it is
// refused at once, and the call can still end normally.
func TestParkedBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Options{MaxParked: 2})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var errs []chan error
		for range 3 {
			out := make(outcomes, 4)
			callCtx, pc, err := s.Park(ctx, testBind, elicitCaps(), time.Minute, out.finish)
			if err != nil {
				t.Fatal(err)
			}
			ch := make(chan error, 1)
			errs = append(errs, ch)
			go func() {
				_, err := pc.Ask(callCtx, "elicitation/create", "form", &mcp.ElicitParams{Message: "?"})
				ch <- err
			}()
			synctest.Wait()
		}
		if n := s.Count(); n != 2 {
			t.Errorf("parked calls = %d, want the bound 2", n)
		}
		select {
		case err := <-errs[2]:
			var rpcErr *jsonrpc.Error
			if !errors.As(err, &rpcErr) {
				t.Errorf("third call's request: %v, want a JSON-RPC error saying too many calls wait", err)
			}
		default:
			t.Error("the third call's request was not refused")
		}
	})
}

// A client that did not declare a capability gets -32021 naming it.
func TestNeedCap(t *testing.T) {
	tests := []struct {
		method, mode string
		caps         *mcp.ClientCapabilities
		want         string // missing capability; "" for none
	}{
		{"sampling/createMessage", "", &mcp.ClientCapabilities{}, "sampling"},
		{"sampling/createMessage", "", &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}}, ""},
		{"elicitation/create", "form", &mcp.ClientCapabilities{}, "elicitation"},
		{"elicitation/create", "form", elicitCaps(), ""},
		{"elicitation/create", "url", elicitCaps(), "elicitation.url"},
		{"elicitation/create", "url", &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}}, ""},
		{"roots/list", "", &mcp.ClientCapabilities{}, "roots"},
		{"roots/list", "", &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}}, ""},
	}
	for _, tt := range tests {
		err := NeedCap(tt.method, "fx", tt.mode, tt.caps)
		if tt.want == "" {
			if err != nil {
				t.Errorf("NeedCap(%s, %s, %+v) = %v, want nil", tt.method, tt.mode, tt.caps, err)
			}
			continue
		}
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != mcp.CodeMissingRequiredClientCapabilities {
			t.Errorf("NeedCap(%s, %s) = %v, want code -32021", tt.method, tt.mode, err)
			continue
		}
		if want := `capability "` + tt.want + `"`; !strings.Contains(rpcErr.Message, want) {
			t.Errorf("NeedCap(%s, %s) = %q, want it to name %s", tt.method, tt.mode, rpcErr.Message, want)
		}
	}
}
