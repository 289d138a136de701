package wire

import (
	"errors"
	"net/http"
	"strconv"
)

// AppendResponse appends the JSON-RPC response to id with result to dst.
func AppendResponse(dst, id, result []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	dst = append(dst, `,"result":`...)
	dst = append(dst, result...)
	return append(dst, '}')
}

// WriteWhole writes body, the whole of the response, and sends it at once:
// with its length known, the headers and body go out in one write, before
// the handler's own bookkeeping and net/http's end of the request, and
// without a chunked encoding to end. It returns the write's error (a
// writer that cannot flush sends the body when the handler returns).
func WriteWhole(w http.ResponseWriter, body []byte) error {
	w.Header()["Content-Length"] = []string{strconv.Itoa(len(body))}
	_, err := w.Write(body)
	if ferr := http.NewResponseController(w).Flush(); err == nil && !errors.Is(ferr, http.ErrNotSupported) {
		err = ferr
	}
	return err
}
