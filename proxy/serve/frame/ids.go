package frame

import (
	"bytes"

	"github.com/manifold-mcp/manifold/proxy/internal/wire"
)

// MappedIDPrefix starts the ids the proxy gives the SDK in place of ids it
// would not echo exactly. A client id that starts with it is mapped too, so
// that the two can never meet.
const MappedIDPrefix = `"~mf.`

// NeedsMapping reports whether the SDK would answer id (a valid JSON string or
// number) with different bytes: numbers that are not plain int64 integers
// (1.5, 1e2, 30 digits, -0), strings with escapes or with U+2028 or U+2029
// (which Go writes escaped), and strings in the proxy's own id space.
func NeedsMapping(id []byte) bool {
	if id[0] != '"' {
		return !wire.ExactInt64(id)
	}
	return bytes.IndexByte(id, '\\') >= 0 || bytes.Contains(id, []byte("\u2028")) ||
		bytes.Contains(id, []byte("\u2029")) || bytes.HasPrefix(id, []byte(MappedIDPrefix))
}
