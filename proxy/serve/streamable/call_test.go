package streamable

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestQueueProgress: a full queue of a lean call's progress keeps the
// newest notifications, in order, and never blocks.
func TestQueueProgress(t *testing.T) {
	q := make(chan []byte, 3)
	for i := 1; i <= 5; i++ {
		queueProgress(q, &mcp.ProgressNotificationParams{ProgressToken: "t", Progress: float64(i)})
	}
	var got []string
	for len(q) > 0 {
		var m struct {
			Method string `json:"method"`
			Params struct {
				Progress float64 `json:"progress"`
			} `json:"params"`
		}
		if err := json.Unmarshal(<-q, &m); err != nil || m.Method != "notifications/progress" {
			t.Fatalf("message %+v: %v", m, err)
		}
		got = append(got, fmt.Sprint(m.Params.Progress))
	}
	if want := []string{"3", "4", "5"}; !slices.Equal(got, want) {
		t.Errorf("queued %q, want %q", got, want)
	}
}
