package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// This file holds what import and connect share: reading a client file
// with a bound, writing a file atomically without being led elsewhere by a
// symlink, and showing a change as a unified diff.

// maxClientFile bounds a file read by import, connect or doctor.
const maxClientFile = 64 << 20

// readBounded reads the file at path, refusing one larger than
// maxClientFile or one that is not a regular file (a FIFO would block).
// ok is false when the file does not exist.
func readBounded(path string) (data []byte, ok bool, err error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if !st.Mode().IsRegular() {
		return nil, false, fmt.Errorf("%s: not a regular file; not read", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	data, err = io.ReadAll(io.LimitReader(f, maxClientFile+1))
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > maxClientFile {
		return nil, false, fmt.Errorf("%s: larger than %d MiB; not read", path, maxClientFile>>20)
	}
	return data, true, nil
}

// writeTarget returns the file that writing path changes: path itself, or,
// when path is a symlink, the file it points to (so that a dotfiles link
// stays a link). It refuses a link to something that is not a regular file.
func writeTarget(path string) (target string, err error) {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return path, nil
	}
	if err != nil {
		return "", err
	}
	if st.Mode()&fs.ModeSymlink == 0 {
		if !st.Mode().IsRegular() {
			return "", fmt.Errorf("%s: not a regular file; not written", path)
		}
		return path, nil
	}
	target, err = filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("%s is a symlink that cannot be followed (%w); not written: fix or remove the link", path, err)
	}
	tst, err := os.Stat(target)
	if err != nil || !tst.Mode().IsRegular() {
		return "", fmt.Errorf("%s is a symlink to %s, which is not a regular file; not written", path, target)
	}
	return target, nil
}

// writeAtomic replaces the file at path (or the file its symlink points
// to, see writeTarget) with data: a temporary file in the same folder,
// synced, then renamed over it, so that a reader sees the old file or the
// new one, never half of one. A new file gets perm; an existing one keeps
// its mode. It returns the file written.
func writeAtomic(path string, data []byte, perm fs.FileMode) (string, error) {
	target, err := writeTarget(path)
	if err != nil {
		return "", err
	}
	if st, err := os.Stat(target); err == nil {
		perm = st.Mode().Perm()
	}
	dir := filepath.Dir(target)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(target)+".manifold-*")
	if err != nil {
		return "", fmt.Errorf("write %s: %w", target, err)
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing is there to remove
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return "", fmt.Errorf("write %s: %w", target, err)
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return "", fmt.Errorf("write %s: %w", target, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", fmt.Errorf("write %s: %w", target, err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("write %s: %w", target, err)
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return "", fmt.Errorf("write %s: %w", target, err)
	}
	return target, nil
}

// unifiedDiff returns the change from old to new as a unified diff with
// three lines of context, or "" when they are equal.
func unifiedDiff(oldName, newName, old, new string) string {
	if old == new {
		return ""
	}
	a, b := splitLines(old), splitLines(new)
	// Common head and tail first: the edits of import and connect are
	// small, the files may be long.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ops := lineOps(a[pre:len(a)-suf], b[pre:len(b)-suf])
	// ops over the whole files: equal head, the middle, equal tail.
	var all []diffOp
	for i := 0; i < pre; i++ {
		all = append(all, diffOp{' ', a[i]})
	}
	all = append(all, ops...)
	for i := len(a) - suf; i < len(a); i++ {
		all = append(all, diffOp{' ', a[i]})
	}
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", oldName, newName)
	const ctx = 3
	ai, bi := 0, 0 // line numbers (0-based) in a and b at all[i]
	for i := 0; i < len(all); {
		if all[i].kind == ' ' {
			i, ai, bi = i+1, ai+1, bi+1
			continue
		}
		// A hunk: from ctx lines before this change to ctx lines after the
		// last change that is within 2*ctx of the next.
		start := max(i-ctx, 0)
		for j := start; j < i; j++ {
			ai, bi = ai-1, bi-1
		}
		end := i
		for k := i; k < len(all); k++ {
			if all[k].kind != ' ' {
				end = k
			} else if k-end > 2*ctx {
				break
			}
		}
		stop := min(end+ctx+1, len(all))
		na, nb := 0, 0
		for _, op := range all[start:stop] {
			if op.kind != '+' {
				na++
			}
			if op.kind != '-' {
				nb++
			}
		}
		as, bs := ai+1, bi+1
		if na == 0 {
			as = ai
		}
		if nb == 0 {
			bs = bi
		}
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", as, na, bs, nb)
		for _, op := range all[start:stop] {
			out.WriteByte(op.kind)
			out.WriteString(op.line)
			if !strings.HasSuffix(op.line, "\n") {
				out.WriteString("\n\\ No newline at end of file\n")
			}
		}
		ai, bi, i = ai+na, bi+nb, stop
	}
	return out.String()
}

type diffOp struct {
	kind byte // ' ', '-' or '+'
	line string
}

func splitLines(s string) []string {
	var out []string
	for l := range strings.Lines(s) {
		out = append(out, l)
	}
	return out
}

// lineOps is the longest-common-subsequence diff of a and b; past a size
// where that costs too much it replaces a with b whole.
func lineOps(a, b []string) []diffOp {
	var ops []diffOp
	if len(a)*len(b) > 4<<20 {
		for _, l := range a {
			ops = append(ops, diffOp{'-', l})
		}
		for _, l := range b {
			ops = append(ops, diffOp{'+', l})
		}
		return ops
	}
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			ops = append(ops, diffOp{' ', a[i]})
			i, j = i+1, j+1
		case lcs[i+1][j] >= lcs[i][j+1]:
			ops = append(ops, diffOp{'-', a[i]})
			i++
		default:
			ops = append(ops, diffOp{'+', b[j]})
			j++
		}
	}
	for ; i < n; i++ {
		ops = append(ops, diffOp{'-', a[i]})
	}
	for ; j < m; j++ {
		ops = append(ops, diffOp{'+', b[j]})
	}
	return ops
}
