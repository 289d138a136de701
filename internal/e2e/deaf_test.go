package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestDeafServerHoldsNoOtherCall: a server that stops reading its input
// (its pipe full, frames piling up) never holds the client's other calls,
// although calls are written to servers by the goroutine that reads the
// client (proxy startCall): what the pipe does not take is queued, up to
// twice max_message_bytes, and the calls past that are refused at once with
// a tool error that says so. The calls that were queued end at call_timeout.
func TestDeafServerHoldsNoOtherCall(t *testing.T) {
	t.Parallel()
	cfg := fixture("deaf", []string{"-extra", "deaf"}, `max_message_bytes = 1048576`, `call_timeout = "3s"`) +
		fixture("ok", nil)
	r := startRaw(t, writeConfig(t, cfg))
	r.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	if m := r.await(t, `1`); len(m.Result) == 0 {
		t.Fatalf("initialize: %s", m.Error)
	}
	r.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	r.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"deaf__deaf"}}`)
	if text, isErr := rawCallText(t, r.await(t, `2`)); isErr || !strings.Contains(text, "deaf") {
		t.Fatalf("deaf__deaf: %q (isError %v)", text, isErr)
	}

	// Eight calls of 512 KiB each: the pipe takes 64 KiB, the queue 2 MiB.
	big := strings.Repeat("x", 512<<10)
	const calls = 8
	for i := range calls {
		r.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":"d%d","method":"tools/call","params":{"name":"deaf__echo","arguments":{"message":%q}}}`, i, big))
	}
	// Read after all of them: with a write that waits for the deaf server,
	// this call would never be read.
	r.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ok__echo","arguments":{"message":"still here"}}}`)
	answers := r.responses(t, calls+1)
	if text, isErr := rawCallText(t, answers["3"]); isErr || text != "ok: still here" {
		t.Fatalf("ok__echo behind a deaf server: %q (isError %v)", text, isErr)
	}

	refused, timedOut := 0, 0
	for i := range calls {
		m, ok := answers[fmt.Sprintf(`"d%d"`, i)]
		if !ok {
			t.Errorf("no answer to call d%d", i)
			continue
		}
		text, isErr := rawCallText(t, m)
		switch {
		case !isErr:
			t.Errorf("call d%d to the deaf server succeeded: %.80q", i, text)
		case strings.Contains(text, "is not reading its input") && strings.Contains(text, "nothing was executed"):
			refused++
		case strings.Contains(text, "did not answer"):
			timedOut++
		default:
			t.Errorf("call d%d: unexpected error text %q", i, text)
		}
	}
	if refused == 0 || timedOut == 0 {
		t.Errorf("%d calls refused as not read and %d timed out, want some of each", refused, timedOut)
	}
}

// responses reads stdout until n responses came, and returns them by raw id.
func (r *rawStdio) responses(t *testing.T, n int) map[string]rawMessage {
	t.Helper()
	got := map[string]rawMessage{}
	deadline := time.After(testTimeout)
	for len(got) < n {
		select {
		case line, ok := <-r.lines:
			if !ok {
				t.Fatalf("stdout ended after %d of %d responses", len(got), n)
			}
			m, err := parseFrame(line)
			if err != nil {
				t.Fatalf("stdout line %.200q: %v", line, err)
			}
			if m.Method == "" {
				got[string(m.ID)] = m
			}
		case <-deadline:
			t.Fatalf("%d of %d responses within %s", len(got), n, testTimeout)
		}
	}
	return got
}

// rawCallText returns the text of a tools/call response's first content, and
// its isError.
func rawCallText(t *testing.T, m rawMessage) (string, bool) {
	t.Helper()
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil || len(res.Content) == 0 {
		t.Fatalf("result %s, error %s: want a text content", m.Result, m.Error)
	}
	return res.Content[0].Text, res.IsError
}
