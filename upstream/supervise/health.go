package supervise

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/upstream"
)

// HealthCheck checks a server through the real path: a tool call (or a
// resource read) whose answer must contain an expected text. A server that
// answers pings but fails its check is reported unhealthy and, after
// Failures checks in a row, restarted.
type HealthCheck struct {
	// Tool is the original name of the tool to call; Arguments its JSON
	// arguments (nil for none).
	Tool      string
	Arguments json.RawMessage
	// Resource is a URI (the server's own) to read instead of calling a tool.
	Resource string
	// Expect must appear in the result's text. If empty, any non-error
	// result passes.
	Expect string
	// Interval between checks. If zero, 30s.
	Interval time.Duration
	// Timeout of one check. If zero, the server's call timeout.
	Timeout time.Duration
	// Failures in a row before the server is restarted. If zero, 3.
	Failures int
}

// checkHealth runs b's health check against up until up ends or the proxy
// closes, and restarts up after too many failures in a row.
func (b *Backend) checkHealth(up *upstream.Upstream) {
	hc := b.cfg.Health
	interval, timeout, limit := hc.Interval, hc.Timeout, hc.Failures
	if interval <= 0 {
		interval = 30 * time.Second
	}
	if timeout <= 0 {
		timeout = b.cfg.CallTimeout
	}
	if limit <= 0 {
		limit = 3
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	failures := 0
	for {
		select {
		case <-t.C:
		case <-up.Done():
			return
		case <-b.rt.Closed:
			return
		}
		ctx, cancel := context.WithTimeout(b.rt.Life, timeout)
		err := runCheck(ctx, up, hc)
		cancel()
		b.mu.Lock()
		b.checked = time.Now()
		b.healthErr = err
		b.mu.Unlock()
		if err == nil {
			if failures > 0 {
				b.log.Info("health check passes again")
			}
			failures = 0
			continue
		}
		failures++
		b.log.Warn("health check failed", "err", err, "failures", failures, "limit", limit)
		if failures >= limit {
			b.log.Error("server unhealthy; restarting it", "failures", failures)
			_ = up.Close() // the supervisor sees it end and restarts it
			return
		}
	}
}

// runCheck performs one health check.
func runCheck(ctx context.Context, up *upstream.Upstream, hc *HealthCheck) error {
	var text string
	if hc.Resource != "" {
		res, err := up.Session().ReadResource(ctx, &mcp.ReadResourceParams{URI: hc.Resource})
		if err != nil {
			return fmt.Errorf("reading %s: %w", hc.Resource, err)
		}
		var sb strings.Builder
		for _, c := range res.Contents {
			if c != nil {
				sb.WriteString(c.Text)
			}
		}
		text = sb.String()
	} else {
		params := map[string]json.RawMessage{}
		params["name"], _ = json.Marshal(hc.Tool)
		if len(hc.Arguments) > 0 {
			params["arguments"] = hc.Arguments
		}
		p, err := json.Marshal(params)
		if err != nil {
			return err
		}
		raw, err := up.CallToolRaw(ctx, p)
		if err != nil {
			return fmt.Errorf("calling %s: %w", hc.Tool, err)
		}
		var res struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			IsError bool `json:"isError"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return fmt.Errorf("calling %s: undecodable result: %w", hc.Tool, err)
		}
		var sb strings.Builder
		for _, c := range res.Content {
			sb.WriteString(c.Text)
		}
		text = sb.String()
		if res.IsError {
			return fmt.Errorf("calling %s: tool error: %s", hc.Tool, oneLine(text))
		}
	}
	if hc.Expect != "" && !strings.Contains(text, hc.Expect) {
		return fmt.Errorf("answer does not contain %q: %s", hc.Expect, oneLine(text))
	}
	return nil
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
