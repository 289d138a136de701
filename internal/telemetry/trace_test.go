package telemetry

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExporterURL(t *testing.T) {
	tests := []struct {
		in, want string
		bad      bool
	}{
		{in: "http://127.0.0.1:4318", want: "http://127.0.0.1:4318/v1/traces"},
		{in: "http://127.0.0.1:4318/", want: "http://127.0.0.1:4318/v1/traces"},
		{in: "https://collector.example/otlp/v1/traces", want: "https://collector.example/otlp/v1/traces"},
		{in: "127.0.0.1:4318", bad: true},
		{in: "grpc://127.0.0.1:4317", bad: true},
		{in: "http://", bad: true},
	}
	for _, tt := range tests {
		got, err := ExporterURL(tt.in)
		if (err != nil) != tt.bad || got != tt.want {
			t.Errorf("ExporterURL(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.bad)
		}
	}
}

func TestFromMeta(t *testing.T) {
	tests := []struct {
		name, meta string
		tp, ts     string
	}{
		{name: "none", meta: ""},
		{name: "other keys", meta: `{"progressToken":1}`},
		{name: "both", meta: `{"traceparent":"00-a-b-01","tracestate":"k=v"}`, tp: "00-a-b-01", ts: "k=v"},
		{name: "not strings", meta: `{"traceparent":1,"tracestate":{}}`},
		{name: "not an object", meta: `["traceparent"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, ts := FromMeta(json.RawMessage(tt.meta))
			if tp != tt.tp || ts != tt.ts {
				t.Errorf("FromMeta(%s) = %q, %q; want %q, %q", tt.meta, tp, ts, tt.tp, tt.ts)
			}
		})
	}
}

// TestSetMetaReplacesTheClients: the trace context sent upstream is the
// span's, in place of the one the client sent, and the other members of
// _meta stay; without a span, _meta is unchanged.
func TestSetMetaReplacesTheClients(t *testing.T) {
	tr, err := NewTracer(TraceOptions{Endpoint: "http://127.0.0.1:1", Ratio: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithCancel(t.Context())
		cancel() // nothing listens on port 1: do not wait to export
		_ = tr.Shutdown(ctx)
	}()
	const client = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	meta := json.RawMessage(`{"progressToken":"p1","traceparent":"` + client + `","tracestate":"client=1"}`)
	if got, err := SetMeta(t.Context(), meta); err != nil || string(got) != string(meta) {
		t.Errorf("SetMeta without a span = %s, %v; want it unchanged", got, err)
	}
	ctx, span := tr.StartServer(t.Context(), Request{Method: "tools/call", Target: "a__x", Traceparent: client, Tracestate: "client=1"})
	defer span.End("", 0)
	ctx, up := tr.StartClient(ctx, Request{Method: "tools/call", Target: "x"})
	defer up.End("", 0)
	got, err := SetMeta(ctx, meta)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]string
	if err := json.Unmarshal(got, &m); err != nil {
		t.Fatal(err)
	}
	tp := m["traceparent"]
	if !strings.HasPrefix(tp, "00-0af7651916cd43dd8448eb211c80319c-") || tp == client || !strings.HasSuffix(tp, "-01") {
		t.Errorf("traceparent sent upstream = %q, want the client's trace with the proxy's span", tp)
	}
	want := map[string]string{"progressToken": "p1", "traceparent": tp, "tracestate": "client=1"}
	if diff := cmp.Diff(want, m); diff != "" {
		t.Errorf("_meta sent upstream (-want +got):\n%s", diff)
	}
	if got, err := SetMeta(ctx, nil); err != nil || !strings.Contains(string(got), tp) {
		t.Errorf("SetMeta(nil) = %s, %v; want an object with the traceparent", got, err)
	}
	if _, err := SetMeta(ctx, json.RawMessage(`[1]`)); err == nil {
		t.Error("SetMeta of a _meta that is not an object did not fail")
	}
}

// TestNilTracer: with traces off every hook is a no-op.
func TestNilTracer(t *testing.T) {
	var tr *Tracer
	ctx, span := tr.StartServer(t.Context(), Request{Method: "tools/call", Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
	if span != nil || ctx != t.Context() {
		t.Error("a nil Tracer started a span")
	}
	span.SetServer("x")
	span.End("tool_error", 0)
	if tp, _ := Context(ctx); tp != "" {
		t.Errorf("Context = %q without a span", tp)
	}
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Error(err)
	}
}

func TestSessionAttr(t *testing.T) {
	if SessionAttr("") != "" {
		t.Error("SessionAttr of no session is not empty")
	}
	a, b := SessionAttr("S3CRETSESSION"), SessionAttr("other")
	if len(a) != 16 || a == b || strings.Contains(a, "S3CRET") || a != SessionAttr("S3CRETSESSION") {
		t.Errorf("SessionAttr = %q, %q: want 16 stable hex digits per session", a, b)
	}
}
