package main

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
)

// TestYieldBeforeRead: a file is wrapped and reads through it give the
// file's bytes and its end exactly; any other reader is left as it is.
func TestYieldBeforeRead(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	in := yieldBeforeRead(r)
	if _, ok := in.(yieldingReader); !ok {
		t.Fatalf("yieldBeforeRead(%T) = %T, want the yielding reader", r, in)
	}
	want := []byte(strings.Repeat(`{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n", 2000))
	go func() {
		_, _ = w.Write(want)
		w.Close()
	}()
	got, err := io.ReadAll(in)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes (%v), want the %d written", len(got), err, len(want))
	}

	sr := strings.NewReader("x")
	if in := yieldBeforeRead(sr); in != io.Reader(sr) {
		t.Errorf("yieldBeforeRead(%T) = %T, want it unchanged", sr, in)
	}
}
