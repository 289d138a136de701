//go:build !linux

package session

import (
	"errors"
	"net/netip"
)

// diagUID is Linux only: elsewhere the caller reads /proc, which is not there either.
func diagUID(local, remote netip.AddrPort) (int, error) {
	return 0, errors.ErrUnsupported
}
