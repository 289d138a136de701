package session

import (
	"encoding/binary"
	"net"
	"net/netip"
	"os"
	"runtime"
	"testing"
)

// TestSocketUID finds the owner of the client end of a real loopback
// connection in /proc/net/tcp{,6}: the user id a session is bound to.
func TestSocketUID(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/net/tcp is Linux only")
	}
	for _, tt := range []struct{ network, addr, table string }{
		{"tcp4", "127.0.0.1:0", "/proc/net/tcp"},
		{"tcp6", "[::1]:0", "/proc/net/tcp6"},
	} {
		t.Run(tt.network, func(t *testing.T) {
			ln, err := net.Listen(tt.network, tt.addr)
			if err != nil {
				t.Skipf("no %s loopback here: %v", tt.network, err)
			}
			defer ln.Close()
			c, err := net.Dial(tt.network, ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			s, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			data, err := os.ReadFile(tt.table)
			if err != nil {
				t.Fatal(err)
			}
			client := netip.MustParseAddrPort(c.LocalAddr().String())
			server := netip.MustParseAddrPort(s.LocalAddr().String())
			uid, ok := socketUID(data, client, server)
			if !ok || uid != os.Getuid() {
				t.Errorf("socketUID(client end) = %d, %v; want %d, true", uid, ok, os.Getuid())
			}
			// The ends are not interchangeable: a swapped pair is the
			// server's own socket, which has the same uid here but must be
			// found as its own entry, and an unknown pair is not found.
			if _, ok := socketUID(data, server, client); !ok {
				t.Errorf("socketUID(server end) not found")
			}
			if _, ok := socketUID(data, client, netip.AddrPortFrom(server.Addr(), server.Port()+1)); ok {
				t.Errorf("socketUID found a connection that does not exist")
			}
		})
	}
}

func TestParseProcAddr(t *testing.T) {
	// The kernel prints each 32-bit word of the address in host byte order;
	// these are the little-endian forms.
	if !littleEndian() {
		t.Skip("the literal forms below are little-endian")
	}
	tests := []struct {
		in   string
		want string // "" = not parsed
	}{
		{in: "0100007F:1F61", want: "127.0.0.1:8033"},
		{in: "0200007F:0050", want: "127.0.0.2:80"},
		{in: "00000000000000000000000001000000:0050", want: "[::1]:80"},
		{in: "0000000000000000FFFF00000100007F:01BB", want: "127.0.0.1:443"},
		{in: "0100007F", want: ""},
		{in: "0100007:1F61", want: ""},
		{in: "0100007G:1F61", want: ""},
		{in: "0100007F:10000", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := parseProcAddr(tt.in)
			if tt.want == "" {
				if ok {
					t.Errorf("parseProcAddr(%q) = %v, want not parsed", tt.in, got)
				}
				return
			}
			if !ok || got.String() != tt.want {
				t.Errorf("parseProcAddr(%q) = %v, %v; want %s", tt.in, got, ok, tt.want)
			}
		})
	}
}

func littleEndian() bool { return binary.NativeEndian.Uint16([]byte{1, 0}) == 1 }
