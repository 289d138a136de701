package confirm

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/manifold-mcp/manifold/internal/redact"
	"github.com/manifold-mcp/manifold/policy"
)

func TestApprovalDigest(t *testing.T) {
	digest := func(t *testing.T, principal, tool, args string) string {
		t.Helper()
		c, err := canonicalArgs(json.RawMessage(args))
		if err != nil {
			t.Fatalf("canonicalArgs(%s): %v", args, err)
		}
		return approvalDigest(principal, tool, c)
	}
	base := digest(t, "stdio", "bank__pay", `{"to":"bob","amount":10,"memo":{"a":1,"b":[1,2]}}`)
	same := []struct{ name, args string }{
		{"key order", `{"memo":{"b":[1,2],"a":1},"amount":10,"to":"bob"}`},
		{"whitespace", "{ \"to\" : \"bob\",\n\t\"amount\": 10, \"memo\": { \"a\": 1, \"b\": [ 1, 2 ] } }"},
		{"escapes", `{"to":"\u0062ob","amount":10,"memo":{"a":1,"b":[1,2]}}`},
	}
	for _, tt := range same {
		t.Run("same/"+tt.name, func(t *testing.T) {
			if got := digest(t, "stdio", "bank__pay", tt.args); got != base {
				t.Errorf("digest of %s differs from the base's", tt.args)
			}
		})
	}
	differ := []struct{ name, principal, tool, args string }{
		{"a value", "stdio", "bank__pay", `{"to":"bob","amount":11,"memo":{"a":1,"b":[1,2]}}`},
		{"a nested value", "stdio", "bank__pay", `{"to":"bob","amount":10,"memo":{"a":1,"b":[2,1]}}`},
		{"a type", "stdio", "bank__pay", `{"to":"bob","amount":"10","memo":{"a":1,"b":[1,2]}}`},
		{"an added key", "stdio", "bank__pay", `{"to":"bob","amount":10,"memo":{"a":1,"b":[1,2]},"x":null}`},
		{"a number's spelling", "stdio", "bank__pay", `{"to":"bob","amount":10.0,"memo":{"a":1,"b":[1,2]}}`},
		{"the tool", "stdio", "bank__refund", `{"to":"bob","amount":10,"memo":{"a":1,"b":[1,2]}}`},
		{"the principal", "session:x", "bank__pay", `{"to":"bob","amount":10,"memo":{"a":1,"b":[1,2]}}`},
	}
	for _, tt := range differ {
		t.Run("differ/"+tt.name, func(t *testing.T) {
			if got := digest(t, tt.principal, tt.tool, tt.args); got == base {
				t.Errorf("digest of %s %s %s equals the base's", tt.principal, tt.tool, tt.args)
			}
		})
	}
	// Length-prefixed parts: moving bytes between parts changes the digest.
	if approvalDigest("ab", "c", []byte("{}")) == approvalDigest("a", "bc", []byte("{}")) {
		t.Error("digest does not separate its parts")
	}
}

func TestCanonicalArgs(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{in: ``, want: `{}`},
		{in: `null`, want: `{}`},
		{in: ` {"b":1,"a":[true,null,"x"]} `, want: `{"a":[true,null,"x"],"b":1}`},
		{in: `{"n":12345678901234567890}`, want: `{"n":12345678901234567890}`},
		// A duplicate key is settled once, here, and what is forwarded is
		// what was shown.
		{in: `{"amount":1,"amount":1000}`, want: `{"amount":1000}`},
		{in: `[1]`, err: "not a JSON object"},
		{in: `{"a":1} {"a":2}`, err: "more than one JSON value"},
		{in: `{"a":`, err: "not a JSON object"},
	}
	for _, tt := range tests {
		got, err := canonicalArgs(json.RawMessage(tt.in))
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("canonicalArgs(%s) = %s, %v; want an error with %q", tt.in, got, err, tt.err)
			}
		case err != nil || string(got) != tt.want:
			t.Errorf("canonicalArgs(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

// anonymousPrincipal is the principal of an anonymous caller whose client
// is not known.
const anonymousPrincipal = "anonymous:"

// commandCall runs approveByCommand for a call of bank__pay with args and
// returns whether it may go on, the audit record and the refusal's text.
func commandCall(t *testing.T, s *Approver, args string) (bool, Answer, string, map[string]json.RawMessage) {
	t.Helper()
	c, err := canonicalArgs(json.RawMessage(args))
	if err != nil {
		t.Fatal(err)
	}
	d := policy.Decision{Visible: true, Confirm: true, ConfirmRule: "servers.bank.confirm", ConfirmSource: "proxy.toml:3", ConfirmReason: "moves money"}
	fields := map[string]json.RawMessage{"arguments": json.RawMessage(args)}
	var refusal string
	ok, rec := s.approveByCommand("bank", "bank__pay", "pay", d, approvalDigest(anonymousPrincipal, "bank__pay", c), c, fields)
	if raw, err := rec.Result, rec.Err; raw != nil || err != nil {
		if err != nil {
			t.Fatalf("done with error %v", err)
		}
		var res struct {
			Content []struct{ Text string }
			IsError bool
		}
		if err := json.Unmarshal(raw, &res); err != nil || !res.IsError || len(res.Content) != 1 {
			t.Fatalf("refusal %s is not one isError text", raw)
		}
		refusal = res.Content[0].Text
	}
	if ok == (refusal != "") {
		t.Fatalf("approveByCommand = %v with refusal %q", ok, refusal)
	}
	return ok, rec, refusal, fields
}

func approve(t *testing.T, dir, id string) {
	t.Helper()
	if err := os.WriteFile(ApprovedFile(dir, id), nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestApproveByCommand(t *testing.T) {
	dir := t.TempDir()
	s := New(Options{Dir: dir, TTL: time.Minute, Redactor: redact.New("s3cret-value-123")})
	const args = `{"amount": 10, "to": "bob", "note": "s3cret-value-123", "api_key": "k-1"}`

	ok, rec, msg, _ := commandCall(t, s, args)
	id := rec.Approval
	if ok || !ValidApprovalID(id) || rec.Confirm != confirmUnavailable {
		t.Fatalf("first call: ok %v, approval %q, confirm %q; want refused with an id, unavailable", ok, id, rec.Confirm)
	}
	if !strings.Contains(msg, "manifold approve-call "+id) || !strings.Contains(msg, "nothing was executed") {
		t.Errorf("refusal does not say how to approve: %q", msg)
	}
	// approve-call's view: the call, its reason, its arguments with the
	// secrets masked.
	b, err := os.ReadFile(ApprovalFile(dir, id))
	if err != nil {
		t.Fatalf("approval file: %v", err)
	}
	var v View
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	wantArgs := "{\n  \"amount\": 10,\n  \"api_key\": \"" + redact.Mask + "\",\n  \"note\": \"" + redact.Mask + "\",\n  \"to\": \"bob\"\n}"
	if diff := cmp.Diff(callView{ID: id, Server: "bank", Tool: "bank__pay", Original: "pay", Reason: "moves money", Rule: "servers.bank.confirm at proxy.toml:3",
		Args: wantArgs, Expires: v.Expires, PID: os.Getpid()}, v); diff != "" {
		t.Errorf("approval file (-want +got):\n%s", diff)
	}
	if strings.Contains(string(b), "s3cret") || strings.Contains(string(b), "k-1") {
		t.Errorf("approval file shows a secret: %s", b)
	}

	// Not approved yet: the same id again, nothing runs.
	if ok, rec, _, _ := commandCall(t, s, args); ok || rec.Approval != id {
		t.Fatalf("retry before approval: ok %v, approval %q; want refused with %q", ok, rec.Approval, id)
	}
	approve(t, dir, id)
	// Another argument: not what was approved.
	if ok, rec, _, _ := commandCall(t, s, `{"amount": 11, "to": "bob", "note": "s3cret-value-123", "api_key": "k-1"}`); ok || rec.Approval == id {
		t.Fatalf("changed argument: ok %v, approval %q; want refused with a new id", ok, rec.Approval)
	}
	// The approved call, in another spelling: once.
	ok, rec, _, fields := commandCall(t, s, `{"to":"bob","api_key":"k-1","amount":10,"note":"s3cret-value-123"}`)
	if !ok || rec.Approval != id || rec.Confirm != confirmAccepted {
		t.Fatalf("approved retry: ok %v, approval %q, confirm %q; want through with %q, accepted", ok, rec.Approval, rec.Confirm, id)
	}
	if got, want := string(fields["arguments"]), `{"amount":10,"api_key":"k-1","note":"s3cret-value-123","to":"bob"}`; got != want {
		t.Errorf("forwarded arguments = %s, want the canonical %s", got, want)
	}
	if fileExists(ApprovalFile(dir, id)) || fileExists(ApprovedFile(dir, id)) {
		t.Error("the used approval's files are left behind")
	}
	// Used: a replay is refused with a new id, and the old approval file,
	// written again, approves nothing.
	approve(t, dir, id)
	ok, rec, _, _ = commandCall(t, s, args)
	if ok || rec.Approval == id {
		t.Fatalf("replay: ok %v, approval %q; want refused with a new id", ok, rec.Approval)
	}
	s.Close()
	if fileExists(ApprovalFile(dir, rec.Approval)) {
		t.Error("Close left a waiting approval's file")
	}
}

func TestApproveByCommandExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		s := New(Options{Dir: dir, TTL: time.Minute})
		const args = `{"amount":10}`
		_, rec, _, _ := commandCall(t, s, args)
		id := rec.Approval
		approve(t, dir, id)
		time.Sleep(time.Minute + time.Second)
		ok, rec, _, _ := commandCall(t, s, args)
		if ok || rec.Confirm != confirmExpired || rec.Approval == id {
			t.Fatalf("after the TTL: ok %v, confirm %q, approval %q; want refused, expired, a new id", ok, rec.Confirm, rec.Approval)
		}
		if fileExists(ApprovalFile(dir, id)) || fileExists(ApprovedFile(dir, id)) {
			t.Error("the expired approval's files are left behind")
		}
	})
}

func TestApproveByCommandWithoutFolder(t *testing.T) {
	s := New(Options{})
	ok, rec, msg, _ := commandCall(t, s, `{}`)
	if ok || rec.Confirm != confirmUnavailable || !strings.Contains(msg, "Use a client that supports elicitation") {
		t.Errorf("without an approval folder: ok %v, confirm %q, %q", ok, rec.Confirm, msg)
	}
}

func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
