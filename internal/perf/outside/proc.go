package outside

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Proc is what a process spent: its threads' CPU time and context
// switches. Load moves
// these far less than it moves latency.
type Proc struct {
	CPU         time.Duration
	Voluntary   int64 // voluntary_ctxt_switches: the thread blocked (a read, a futex)
	Involuntary int64 // nonvoluntary_ctxt_switches: the thread was preempted
	Reads       int64 // read system calls (syscr of /proc/PID/io: read, readv, recvmsg...)
	Writes      int64 // write system calls (syscw)
}

func (p Proc) sub(q Proc) Proc {
	return Proc{p.CPU - q.CPU, p.Voluntary - q.Voluntary, p.Involuntary - q.Involuntary, p.Reads - q.Reads, p.Writes - q.Writes}
}

// Rate is a Proc per call: CPU in µs, context switches, system calls.
type Rate struct{ CPU, Voluntary, Involuntary, Reads, Writes float64 }

// PerCall is p per call of n.
func (p Proc) PerCall(n int) Rate {
	if n == 0 {
		return Rate{}
	}
	f := float64(n)
	return Rate{float64(p.CPU.Nanoseconds()) / 1e3 / f, float64(p.Voluntary) / f, float64(p.Involuntary) / f, float64(p.Reads) / f, float64(p.Writes) / f}
}

// readProc reads pid's Proc from /proc (zero where it cannot: the process
// ended, or not Linux), summed over its live threads (a Go process's
// threads seldom end): the CPU time is the first field of
// /proc/PID/task/TID/schedstat, in nanoseconds, as BenchmarkFloor reads
// it (/proc/PID/stat counts in ticks of 10 ms, too coarse for 500 calls);
// the switches are from /proc/PID/task/TID/status.
func readProc(pid int) Proc {
	var p Proc
	if pid <= 0 {
		return p
	}
	// The process's read and write system calls, its ended threads'
	// included.
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid)); err == nil {
		for line := range strings.Lines(string(b)) {
			k, v, _ := strings.Cut(line, ":")
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			switch k {
			case "syscr":
				p.Reads = n
			case "syscw":
				p.Writes = n
			}
		}
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return p
	}
	for _, t := range tasks {
		dir := fmt.Sprintf("/proc/%d/task/%s/", pid, t.Name())
		if b, err := os.ReadFile(dir + "schedstat"); err == nil {
			if f := strings.Fields(string(b)); len(f) > 0 {
				ns, _ := strconv.ParseInt(f[0], 10, 64)
				p.CPU += time.Duration(ns)
			}
		}
		b, err := os.ReadFile(dir + "status")
		if err != nil {
			continue // the thread ended
		}
		for line := range strings.Lines(string(b)) {
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			switch k {
			case "voluntary_ctxt_switches":
				p.Voluntary += n
			case "nonvoluntary_ctxt_switches":
				p.Involuntary += n
			}
		}
	}
	return p
}

// readTree is readProc of pid and all its descendants, summed.
func readTree(pid int) Proc {
	var sum Proc
	for _, q := range tree(pid) {
		p := readProc(q)
		sum.CPU += p.CPU
		sum.Voluntary += p.Voluntary
		sum.Involuntary += p.Involuntary
		sum.Reads += p.Reads
		sum.Writes += p.Writes
	}
	return sum
}

// tree returns pid and its descendants (/proc/PID/task/TID/children).
func tree(pid int) []int {
	if pid <= 0 {
		return nil
	}
	out := []int{pid}
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, tree(c)...)
			}
		}
	}
	return out
}

func replacePort(s, port string) string { return strings.ReplaceAll(s, "{port}", port) }
