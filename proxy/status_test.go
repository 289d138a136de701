package proxy

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestServerStatusJSON: the status's JSON (GET /status, status --json, the
// status file) has snake_case names and the uptime in seconds, and reads
// back as it was written.
func TestServerStatusJSON(t *testing.T) {
	st := ServerStatus{Name: "files", State: "up", PID: 42, Tools: 3, Restarts: 1, Uptime: 90 * time.Second, Required: true, Health: "ok"}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"name": "files", "state": "up", "pid": 42.0, "tools": 3.0, "restarts": 1.0, "uptime_seconds": 90.0, "required": true, "health": "ok"}
	if diff := cmp.Diff(want, fields); diff != "" {
		t.Errorf("status JSON (-want +got):\n%s", diff)
	}
	var back ServerStatus
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(st, back); diff != "" {
		t.Errorf("status read back (-want +got):\n%s", diff)
	}
}
