package outside

import (
	"strings"
	"testing"
	"time"
)

func TestSpread(t *testing.T) {
	for _, tt := range []struct {
		in   []float64
		want Spread
	}{
		{nil, Spread{}},
		{[]float64{3}, Spread{3, 3, 3}},
		{[]float64{4, 1}, Spread{2.5, 1, 4}},
		{[]float64{5, 1, 3}, Spread{3, 1, 5}},
	} {
		if got := spread(tt.in); got != tt.want {
			t.Errorf("spread(%v) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

// TestSummarize checks that each round's ratio is to the direct target of
// the same transport in the same round, and that the table has a row per
// target.
func TestSummarize(t *testing.T) {
	targets := []Target{
		{Name: Direct, Transport: Stdio}, {Name: "p", Transport: Stdio},
		{Name: Direct, Transport: HTTP}, {Name: "p", Transport: HTTP},
	}
	r := func(p50 time.Duration, tput float64, cpu time.Duration) Result {
		return Result{P50: p50, Throughput: tput, Calls: 100, SeqCalls: 10, Own: Proc{CPU: cpu}}
	}
	res := [][]Result{
		{r(100, 1000, 0), r(150, 800, 10*time.Millisecond), r(200, 500, 0), r(200, 600, 0)},
		{r(200, 2000, 0), r(260, 1800, 20*time.Millisecond), r(100, 500, 0), r(90, 400, 0)},
		{r(100, 1000, 0), r(120, 700, 30*time.Millisecond), r(200, 500, 0), r(220, 500, 0)},
	}
	rows, err := Summarize(targets, res)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rows[1].P50Ratio, (Spread{1.3, 1.2, 1.5}); got != want {
		t.Errorf("stdio p50 ratio %+v, want %+v", got, want)
	}
	if got, want := rows[1].ThroughputRatio, (Spread{0.8, 0.7, 0.9}); got != want {
		t.Errorf("stdio throughput ratio %+v, want %+v", got, want)
	}
	if got, want := rows[1].CPU, (Spread{200, 100, 300}); got != want {
		t.Errorf("stdio CPU µs/call %+v, want %+v", got, want)
	}
	if got, want := rows[3].P50Ratio, (Spread{1, 0.9, 1.1}); got != want {
		t.Errorf("http p50 ratio %+v, want %+v", got, want)
	}
	var b strings.Builder
	Print(&b, rows)
	if lines := strings.Count(b.String(), "\n"); lines != 2+len(targets) {
		t.Errorf("%d lines, want %d:\n%s", lines, 2+len(targets), b.String())
	}
	if !strings.Contains(b.String(), "| p | stdio | 1.30× (1.20–1.50) | 0.80× (0.70–0.90) |") {
		t.Errorf("no stdio row of p with its ratios:\n%s", b.String())
	}
	if _, err := Summarize(targets[1:2], res); err == nil {
		t.Error("Summarize without a direct target: no error")
	}
}
