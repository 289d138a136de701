package session

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Peer identifies the client end of an HTTP connection: its IP address
// and, for a loopback peer on Linux, the user id owning the client's socket,
// and with authentication the user of the request (see OwnerOf). An HTTP
// session belongs to the peer that created it.
type Peer struct {
	Addr netip.Addr // unmapped; the IPv6 loopback is recorded as 127.0.0.1
	UID  int        // -1 when unknown
	User string     // the authenticated user (auth.TokenInfo.UserID); "" without authentication
}

func (p Peer) String() string {
	s := p.Addr.String()
	if p.UID >= 0 {
		s += " uid " + strconv.Itoa(p.UID)
	}
	if p.User != "" {
		s += " user " + strconv.Quote(p.User)
	}
	return s
}

// connPeerKey is the context key of a connection's *connPeer.
type connPeerKey struct{}

// connPeer computes a connection's peer once, on its first request that
// needs it.
type connPeer struct {
	once sync.Once
	p    Peer
}

// WithConnPeer is an http.Server ConnContext that gives each connection a
// place for its peer.
func WithConnPeer(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, connPeerKey{}, &connPeer{})
}

// PeerOf returns the peer of r's connection.
func PeerOf(r *http.Request) Peer {
	cp, _ := r.Context().Value(connPeerKey{}).(*connPeer)
	if cp == nil {
		return lookupPeer(r)
	}
	cp.once.Do(func() { cp.p = lookupPeer(r) })
	return cp.p
}

func lookupPeer(r *http.Request) Peer {
	p := Peer{UID: -1}
	remote, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		// Not TCP (a test's recorder, a unix socket): everything is one peer.
		return p
	}
	p.Addr = remote.Addr().Unmap()
	if p.Addr == netip.IPv6Loopback() {
		p.Addr = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	}
	if !p.Addr.IsLoopback() {
		return p
	}
	la, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if la == nil {
		return p
	}
	local, err := netip.ParseAddrPort(la.String())
	if err != nil {
		return p
	}
	// The client's socket is the one whose local end is our remote.
	switch uid, err := diagUID(remote, local); {
	case err == nil:
		p.UID = uid
		return p
	case errors.Is(err, errNotFound):
		return p
	}
	// The kernel cannot be asked (not Linux, or no sock_diag): read the
	// tables, every socket of the machine.
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue // not Linux, or no IPv6
		}
		if uid, ok := socketUID(data, remote, local); ok {
			p.UID = uid
			break
		}
	}
	return p
}

// errNotFound is diagUID's answer when the kernel has no such socket.
var errNotFound = errors.New("no such socket")

// socketUID finds, in the text of /proc/net/tcp or /proc/net/tcp6, the
// socket whose local address is local and remote address is remote, and
// returns the uid that owns it.
func socketUID(table []byte, local, remote netip.AddrPort) (int, bool) {
	local = netip.AddrPortFrom(local.Addr().Unmap(), local.Port())
	remote = netip.AddrPortFrom(remote.Addr().Unmap(), remote.Port())
	sc := bufio.NewScanner(bytes.NewReader(table))
	sc.Buffer(make([]byte, 0, 512), 4096)
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
		f := strings.Fields(sc.Text())
		if len(f) < 8 || !strings.HasSuffix(f[0], ":") {
			continue // the header line
		}
		l, ok1 := parseProcAddr(f[1])
		r, ok2 := parseProcAddr(f[2])
		if !ok1 || !ok2 || l != local || r != remote {
			continue
		}
		uid, err := strconv.Atoi(f[7])
		if err != nil || uid < 0 {
			return 0, false
		}
		return uid, true
	}
	return 0, false
}

// parseProcAddr parses an address of /proc/net/tcp{,6}: the IP as 32-bit
// words in hex, each in the host's byte order, then ':' and the port in hex.
func parseProcAddr(s string) (netip.AddrPort, bool) {
	ipHex, portHex, ok := strings.Cut(s, ":")
	if !ok || (len(ipHex) != 8 && len(ipHex) != 32) {
		return netip.AddrPort{}, false
	}
	raw, err := hex.DecodeString(ipHex)
	if err != nil {
		return netip.AddrPort{}, false
	}
	var ip [16]byte
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(ip[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	port, err := strconv.ParseUint(portHex, 16, 16)
	if err != nil {
		return netip.AddrPort{}, false
	}
	var addr netip.Addr
	if len(raw) == 4 {
		addr = netip.AddrFrom4([4]byte(ip[:4]))
	} else {
		addr = netip.AddrFrom16(ip).Unmap()
	}
	return netip.AddrPortFrom(addr, uint16(port)), true
}
