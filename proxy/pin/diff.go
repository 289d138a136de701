package pin

import "strings"

// maxDiffCells bounds the work of one diff (lines of old times lines of
// new); beyond it the diff shows the whole of both sides.
const maxDiffCells = 1 << 20

// Diff shows how the canonical form now differs from was, line by line
// over their indented forms (Pretty): unchanged lines start with two
// spaces, removed ones with "- ", added ones with "+ "; runs of more than
// context unchanged lines are elided to "  ...". An empty was is a new
// definition: every line is added.
func Diff(was, now string, context int) string {
	var a []string
	if was != "" {
		a = strings.Split(Pretty(was), "\n")
	}
	b := strings.Split(Pretty(now), "\n")
	ops := diffLines(a, b)
	var out strings.Builder
	for i := 0; i < len(ops); i++ {
		op := ops[i]
		if op.kind != ' ' {
			out.WriteString(string(op.kind) + " " + op.text + "\n")
			continue
		}
		// A run of unchanged lines: keep context lines next to changes.
		j := i
		for j < len(ops) && ops[j].kind == ' ' {
			j++
		}
		run := ops[i:j]
		head, tail := context, context
		if i == 0 {
			head = 0
		}
		if j == len(ops) {
			tail = 0
		}
		if len(run) <= head+tail+1 {
			for _, r := range run {
				out.WriteString("  " + r.text + "\n")
			}
		} else {
			for _, r := range run[:head] {
				out.WriteString("  " + r.text + "\n")
			}
			out.WriteString("  ...\n")
			for _, r := range run[len(run)-tail:] {
				out.WriteString("  " + r.text + "\n")
			}
		}
		i = j - 1
	}
	return out.String()
}

type diffOp struct {
	kind byte // ' ', '-' or '+'
	text string
}

// diffLines is a longest-common-subsequence line diff of a and b.
func diffLines(a, b []string) []diffOp {
	// Common head and tail first: most changes touch a few lines.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var ops []diffOp
	for _, l := range a[:pre] {
		ops = append(ops, diffOp{' ', l})
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	if len(ma)*len(mb) > maxDiffCells {
		for _, l := range ma {
			ops = append(ops, diffOp{'-', l})
		}
		for _, l := range mb {
			ops = append(ops, diffOp{'+', l})
		}
	} else {
		// lcs[i][j] is the LCS length of ma[i:] and mb[j:].
		lcs := make([][]int, len(ma)+1)
		for i := range lcs {
			lcs[i] = make([]int, len(mb)+1)
		}
		for i := len(ma) - 1; i >= 0; i-- {
			for j := len(mb) - 1; j >= 0; j-- {
				if ma[i] == mb[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < len(ma) || j < len(mb) {
			switch {
			case i < len(ma) && j < len(mb) && ma[i] == mb[j]:
				ops = append(ops, diffOp{' ', ma[i]})
				i++
				j++
			case i < len(ma) && (j == len(mb) || lcs[i+1][j] >= lcs[i][j+1]):
				ops = append(ops, diffOp{'-', ma[i]})
				i++
			default:
				ops = append(ops, diffOp{'+', mb[j]})
				j++
			}
		}
	}
	for _, l := range a[len(a)-suf:] {
		ops = append(ops, diffOp{' ', l})
	}
	return ops
}
