package pagetrim

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestMappings: only the binary's private read-only mappings with no
// anonymous page are candidates; other files, writable mappings, a
// relocated (copied-on-write) read-only one, another inode and lines that
// are not smaps are not.
func TestMappings(t *testing.T) {
	const exe = "/opt/my tools/manifold (deleted)"
	smaps := `00400000-00c00000 r-xp 00000000 fe:00 42                                 /opt/my tools/manifold (deleted)
Size:               8192 kB
Rss:                3072 kB
Anonymous:             0 kB
Swap:                  0 kB
VmFlags: rd ex mr mw me
00c00000-01000000 r--p 00800000 fe:00 42                                 /opt/my tools/manifold (deleted)
Rss:                 512 kB
Anonymous:             8 kB
01000000-01100000 r--p 00c00000 fe:00 42                                 /opt/my tools/manifold (deleted)
Rss:                 256 kB
Anonymous:             0 kB
Swap:                  4 kB
01100000-01200000 rw-p 00d00000 fe:00 42                                 /opt/my tools/manifold (deleted)
Rss:                 128 kB
Anonymous:             0 kB
01200000-01300000 r--p 00000000 fe:00 43                                 /opt/my tools/manifold (deleted)
Rss:                  64 kB
Anonymous:             0 kB
01300000-01400000 r-xp 00000000 fe:00 42                                 /opt/my tools/manifold.old
Rss:                  64 kB
Anonymous:             0 kB
01400000-01500000 r--s 00000000 fe:00 42                                 /opt/my tools/manifold (deleted)
Rss:                  64 kB
01600000-01500000 r--p 00000000 fe:00 42                                 /opt/my tools/manifold (deleted)
Rss:                  64 kB
garbage line
Rss: 99 kB
7ffd0000-7ffd1000 r--p 00000000 00:00 0                                  [vvar]
Rss:                   4 kB
02000000-02100000 r--p 01000000 fe:00 42                                 /opt/my tools/manifold (deleted)
Rss:                1024 kB
Anonymous:             0 kB`
	got := mappings([]byte(smaps), exe, 42)
	want := []mapping{{0x400000, 0xc00000, 3072 << 10}, {0x2000000, 0x2100000, 1024 << 10}}
	if len(got) != len(want) {
		t.Fatalf("mappings = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("mapping %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// exeRss returns the resident bytes of this process's own candidate
// mappings.
func exeRss(t *testing.T) int64 {
	t.Helper()
	smaps, exe, ino := ownSmaps(t)
	var n int64
	ms := mappings(smaps, exe, ino)
	if len(ms) == 0 {
		t.Fatalf("no read-only mapping of %s found in /proc/self/smaps", exe)
	}
	for _, m := range ms {
		n += m.rss
	}
	return n
}

// TestReleaseOwnBinary: Release on this test's own process unmaps most of
// the pages of its binary it had mapped, and the process runs on (its code
// and tables are mapped again as it touches them: a GC walks every
// goroutine's stack through the runtime's tables).
func TestReleaseOwnBinary(t *testing.T) {
	before := exeRss(t)
	released, err := Release()
	if err != nil {
		t.Fatalf("Release: %v", err)
	}
	after := exeRss(t)
	t.Logf("the binary's read-only mappings: %d KB resident before, %d KB released, %d KB resident after", before>>10, released>>10, after>>10)
	if released <= 0 || released > before+(1<<20) {
		t.Errorf("released %d bytes of %d resident", released, before)
	}
	if after >= before {
		t.Errorf("resident %d bytes after Release, %d before; want fewer", after, before)
	}
	runtime.GC()
	if again := exeRss(t); again <= 0 {
		t.Errorf("after a GC, %d bytes of the binary resident; want its working pages back", again)
	}
	// The mappings released take no huge page again (VmFlags "nh"): one
	// fault would map a 2 MB folio of the page cache whole.
	for _, m := range binaryMappings(t) {
		if !m.noHuge {
			t.Errorf("mapping %x-%x of the binary: VmFlags without nh after Release", m.start, m.end)
		}
	}
}

// flagged is a read-only private mapping of the test's binary and whether
// its VmFlags have nh (MADV_NOHUGEPAGE).
type flagged struct {
	start, end uintptr
	noHuge     bool
}

// binaryMappings lists the mappings Release works on, with their VmFlags' nh.
func binaryMappings(t *testing.T) []flagged {
	t.Helper()
	smaps, exe, ino := ownSmaps(t)
	var out []flagged
	for _, m := range mappings(smaps, exe, ino) {
		out = append(out, flagged{start: m.start, end: m.end, noHuge: vmFlag(t, smaps, m.start, "nh")})
	}
	if len(out) == 0 {
		t.Fatal("no read-only mapping of the binary found in /proc/self/smaps")
	}
	return out
}

// vmFlag reports whether the mapping that starts at start has flag in its
// VmFlags line.
func vmFlag(t *testing.T, smaps []byte, start uintptr, flag string) bool {
	t.Helper()
	header := fmt.Sprintf("%08x-", start)
	in := false
	for _, line := range strings.Split(string(smaps), "\n") {
		if f := strings.Fields(line); len(f) > 0 && !strings.HasSuffix(f[0], ":") {
			in = strings.HasPrefix(line, header)
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return slices.Contains(strings.Fields(line)[1:], flag)
		}
	}
	t.Fatalf("no VmFlags for the mapping at %x", start)
	return false
}

// ownSmaps returns this process's /proc/self/smaps, and its binary's path
// and inode, as Release reads them.
func ownSmaps(t *testing.T) (smaps []byte, exe string, ino uint64) {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/exe", &st); err != nil {
		t.Fatal(err)
	}
	if smaps, err = os.ReadFile("/proc/self/smaps"); err != nil {
		t.Fatal(err)
	}
	return smaps, exe, st.Ino
}
