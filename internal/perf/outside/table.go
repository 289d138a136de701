package outside

import (
	"fmt"
	"io"
	"slices"
)

// Spread is a figure's median over the rounds (of an even number, the
// mean of the middle two) and its range.
type Spread struct{ Median, Min, Max float64 }

func spread(v []float64) Spread {
	if len(v) == 0 {
		return Spread{}
	}
	v = slices.Clone(v)
	slices.Sort(v)
	m := v[len(v)/2]
	if len(v)%2 == 0 {
		m = (v[len(v)/2-1] + m) / 2
	}
	return Spread{m, v[0], v[len(v)-1]}
}

// Row is one target's figures over the rounds: its ratios to the direct
// target of its transport, measured in the same round, and its own.
type Row struct {
	Target
	P50Ratio, ThroughputRatio Spread // proxy/direct; 1 for a direct target
	P50, Throughput           Spread // µs; calls per second
	CPU, TreeCPU              Spread // µs per call: the process's own, and with its descendants
	SeqCPU                    Spread // µs per call of the process over the sequential calls alone
	Voluntary, Involuntary    Spread // context switches per call, the process's own
	Reads, Writes             Spread // read and write system calls per call, the process's own
	ClientCPU                 Spread // µs per call of the measuring process
	Dials                     Spread // HTTP: connections the client opened per 1,000 calls
	Rounds                    int
}

// Summarize makes a Row of each target of res (by round, by target, as
// Rounds returns them). Each round's ratio is to the direct target of the
// same transport in the same round.
func Summarize(targets []Target, res [][]Result) ([]Row, error) {
	direct := map[string]int{}
	for i, t := range targets {
		if t.Name == Direct {
			direct[t.Transport] = i
		}
	}
	var rows []Row
	for i, t := range targets {
		d, ok := direct[t.Transport]
		if !ok {
			return nil, fmt.Errorf("no %s target over %s to compare %s with", Direct, t.Transport, t.Name)
		}
		var p50r, tputr, p50, tput, cpu, seqCPU, treeCPU, vol, invol, reads, writes, client, dials []float64
		for _, round := range res {
			m, dm := round[i], round[d]
			p50r = append(p50r, float64(m.P50)/float64(dm.P50))
			tputr = append(tputr, m.Throughput/dm.Throughput)
			p50 = append(p50, float64(m.P50.Nanoseconds())/1e3)
			tput = append(tput, m.Throughput)
			own, tr := m.Own.PerCall(m.Calls), m.Tree.PerCall(m.Calls)
			cpu, treeCPU = append(cpu, own.CPU), append(treeCPU, tr.CPU)
			seqCPU = append(seqCPU, m.Seq.PerCall(m.SeqCalls).CPU)
			vol, invol = append(vol, own.Voluntary), append(invol, own.Involuntary)
			reads, writes = append(reads, own.Reads), append(writes, own.Writes)
			client = append(client, float64(m.ClientCPU.Nanoseconds())/1e3/float64(max(m.Calls, 1)))
			dials = append(dials, 1000*float64(m.Dials)/float64(max(m.Calls, 1)))
		}
		rows = append(rows, Row{Target: t, P50Ratio: spread(p50r), ThroughputRatio: spread(tputr),
			P50: spread(p50), Throughput: spread(tput), CPU: spread(cpu), SeqCPU: spread(seqCPU), TreeCPU: spread(treeCPU),
			Voluntary: spread(vol), Involuntary: spread(invol), Reads: spread(reads), Writes: spread(writes), ClientCPU: spread(client), Dials: spread(dials), Rounds: len(res)})
	}
	return rows, nil
}

// Print writes rows as a Markdown table: the ratios (median of the
// rounds, range in parentheses), then the medians of the absolute figures.
func Print(w io.Writer, rows []Row) {
	fmt.Fprintln(w, "| through | transport | p50 vs direct | throughput vs direct | p50 µs | calls/s | CPU µs/call | of it sequential | with its servers | switches/call (vol., invol.) | syscalls/call (read, write) | client CPU µs/call | dials/1k calls | rounds |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.1f, %.2f | %.1f, %.1f | %.0f | %.1f | %d |\n",
			r.Name, r.Transport, ratio(r.P50Ratio), ratio(r.ThroughputRatio), r.P50.Median, r.Throughput.Median,
			r.CPU.Median, r.SeqCPU.Median, r.TreeCPU.Median, r.Voluntary.Median, r.Involuntary.Median, r.Reads.Median, r.Writes.Median, r.ClientCPU.Median, r.Dials.Median, r.Rounds)
	}
}

func ratio(s Spread) string {
	if s.Min == s.Max {
		return fmt.Sprintf("%.2f×", s.Median)
	}
	return fmt.Sprintf("%.2f× (%.2f–%.2f)", s.Median, s.Min, s.Max)
}
