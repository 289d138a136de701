package pagetrim

import (
	"os"
	"strconv"
	"syscall"
)

// Release unmaps the resident pages of the binary's clean read-only
// mappings and returns how many bytes of them were resident before (their
// Rss). An error means nothing or not everything was released; the process
// runs on either way.
func Release() (int64, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, err
	}
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/exe", &st); err != nil {
		return 0, err
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	var released int64
	var firstErr error
	for _, m := range mappings(smaps, exe, st.Ino) {
		// First: no huge page for this mapping. The page cache may hold
		// the binary in folios of 2 MB (ext4 on Linux 6.18 does), and one
		// fault on such a folio maps all of it (FilePmdMapped): a proxy at
		// rest then held 2 MB more than its pages' fault-around windows,
		// from one build to the next. A kernel without huge pages refuses
		// the advice; that changes nothing here.
		_ = madvise(m.start, m.end-m.start, syscall.MADV_NOHUGEPAGE)
		if err := madvise(m.start, m.end-m.start, syscall.MADV_DONTNEED); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		released += m.rss
	}
	return released, firstErr
}

// mapping is one candidate of /proc/self/smaps: its address range and its
// resident bytes.
type mapping struct {
	start, end uintptr
	rss        int64
}

// mappings parses smaps and returns the mappings of the file exe (with
// inode ino) that are private, readable, not writable, and hold no
// anonymous (copied-on-write) page. The file's format: a header line per
// mapping ("start-end perms offset dev inode path"), then "Key: value kB"
// lines.
func mappings(smaps []byte, exe string, ino uint64) []mapping {
	var out []mapping
	var cur *mapping
	ok := false // cur is of exe and its header qualifies
	var anon int64
	flush := func() {
		if cur != nil && ok && anon == 0 && cur.end > cur.start {
			out = append(out, *cur)
		}
		cur, ok, anon = nil, false, 0
	}
	for len(smaps) > 0 {
		var line []byte
		if i := indexByte(smaps, '\n'); i >= 0 {
			line, smaps = smaps[:i], smaps[i+1:]
		} else {
			line, smaps = smaps, nil
		}
		f := fields(line)
		if len(f) == 0 {
			continue
		}
		if key := f[0]; key[len(key)-1] == ':' {
			if cur == nil || len(f) < 2 {
				continue
			}
			switch string(key) {
			case "Rss:":
				cur.rss = kb(f[1])
			case "Anonymous:", "Swap:":
				anon += kb(f[1])
			}
			continue
		}
		flush()
		// A header: start-end perms offset dev inode [path…].
		if len(f) < 6 {
			cur = &mapping{}
			continue
		}
		start, end, good := addrRange(f[0])
		perms := f[1]
		cur = &mapping{start: start, end: end}
		n, err := strconv.ParseUint(string(f[4]), 10, 64)
		ok = good && err == nil && n == ino && len(perms) == 4 &&
			perms[0] == 'r' && perms[1] == '-' && perms[3] == 'p' &&
			string(pathOf(line, f)) == exe
	}
	flush()
	return out
}

// kb parses a size in kB and returns it in bytes (0 if it is not a number).
func kb(b []byte) int64 {
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n << 10
}

// addrRange parses "start-end" in hexadecimal.
func addrRange(b []byte) (start, end uintptr, ok bool) {
	i := indexByte(b, '-')
	if i < 0 {
		return 0, 0, false
	}
	s, err1 := strconv.ParseUint(string(b[:i]), 16, 64)
	e, err2 := strconv.ParseUint(string(b[i+1:]), 16, 64)
	if err1 != nil || err2 != nil || e <= s {
		return 0, 0, false
	}
	return uintptr(s), uintptr(e), true
}

// pathOf returns the path of a header line: everything from its sixth
// field on (a path may hold spaces, and a deleted file ends in
// " (deleted)", as /proc/self/exe's link does then).
func pathOf(line []byte, f [][]byte) []byte {
	if len(f) < 6 {
		return nil
	}
	// f[5] is a subslice of line: its offset is where the path starts.
	off := len(line) - cap(f[5])
	if off < 0 || off > len(line) {
		return nil
	}
	return trimRight(line[off:])
}

// fields splits b at runs of spaces and tabs; the fields are subslices of
// b.
func fields(b []byte) [][]byte {
	var out [][]byte
	for i := 0; i < len(b); {
		for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
			i++
		}
		j := i
		for j < len(b) && b[j] != ' ' && b[j] != '\t' {
			j++
		}
		if j > i {
			out = append(out, b[i:j:len(b)])
		}
		i = j
	}
	return out
}

func trimRight(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// madvise is the system call on a range of addresses that are not Go
// memory (syscall.Madvise takes a slice, which would need one made of
// them).
func madvise(addr, n uintptr, advice int) error {
	if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, addr, n, uintptr(advice)); errno != 0 {
		return errno
	}
	return nil
}
