// Command relay is the floor of BenchmarkFloor: the least a proxy in front
// of one stdio MCP server can do, so that the proxy's ratios can be read
// against what one more process on the path costs by itself.
//
//	relay -- SERVER [ARGS...]                  stdio: copies bytes both ways
//	relay -http 127.0.0.1:0 -- SERVER [ARGS...]  streamable HTTP in front of it
//
// Over stdio it copies its stdin to the server's and the server's stdout to
// its own, reading nothing. Over HTTP it reads each POST's body, reads the
// message's id, writes the message to the server, and answers with the
// server's line of the same id as one event of an event stream (a
// notification or response from the client gets 202). It keeps no state
// but the calls in flight; lines the server sends unasked are dropped; a
// GET gets 405 (no stream of its own), as the protocol allows. It says
// where it serves on stderr ("serving MCP on URL") and ends when its stdin
// closes, and the server with it.
//
// It is test support only: nothing in the module imports it.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync"
)

func main() {
	addr := flag.String("http", "", "serve streamable HTTP on this address instead of stdio")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: relay [-http ADDR] -- SERVER [ARGS...]")
		os.Exit(2)
	}
	cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		fail(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		fail(err)
	}
	if err := cmd.Start(); err != nil {
		fail(err)
	}
	if *addr == "" {
		go func() {
			_, _ = io.Copy(in, os.Stdin)
			in.Close()
		}()
		_, _ = io.Copy(os.Stdout, out)
		_ = cmd.Wait()
		return
	}
	serve(*addr, in, out)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "relay:", err)
	os.Exit(1)
}

// serve answers streamable HTTP on addr from the server's stdin and stdout.
func serve(addr string, in io.WriteCloser, out io.Reader) {
	var (
		mu      sync.Mutex
		waiting = map[string]chan []byte{} // message id -> the POST waiting for its answer
		writeMu sync.Mutex
	)
	go func() { // the server's stdout: each answer to its POST
		br := bufio.NewReaderSize(out, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				os.Exit(0)
			}
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			if json.Unmarshal(line, &m) != nil || m.ID == nil {
				continue
			}
			mu.Lock()
			ch := waiting[string(m.ID)]
			delete(waiting, string(m.ID))
			mu.Unlock()
			if ch != nil {
				ch <- bytes.TrimSpace(line)
			}
		}
	}()
	send := func(msg []byte) error {
		writeMu.Lock()
		defer writeMu.Unlock()
		_, err := in.Write(append(bytes.TrimSpace(msg), '\n'))
		return err
	}
	http.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.Unmarshal(body, &m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if m.ID == nil || m.Method == "" { // a notification, or the client's answer
			if send(body) != nil {
				w.WriteHeader(http.StatusBadGateway)
				return
			}
			w.WriteHeader(http.StatusAccepted)
			return
		}
		ch := make(chan []byte, 1)
		mu.Lock()
		waiting[string(m.ID)] = ch
		mu.Unlock()
		if send(body) != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		var answer []byte
		select {
		case answer = <-ch:
		case <-r.Context().Done():
			mu.Lock()
			delete(waiting, string(m.ID))
			mu.Unlock()
			return
		}
		h := w.Header()
		if m.Method == "initialize" {
			h.Set("Mcp-Session-Id", "relay")
		}
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		_, _ = w.Write(append(append([]byte("event: message\ndata: "), answer...), "\n\n"...))
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fail(err)
	}
	fmt.Fprintf(os.Stderr, "relay: serving MCP on http://%s/mcp\n", ln.Addr())
	go func() { // ends with its stdin, as the fixture does
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	fail(http.Serve(ln, nil))
}
