package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzRedactor: a known secret never appears, in any spelling of [Forms],
// in any rendering of a config value that holds it once redacted: URLs with
// the secret in userinfo, query or path, args, headers, env, error strings,
// and each of those JSON-encoded, Go-quoted or logged by log/slog.
func FuzzRedactor(f *testing.F) {
	for _, s := range []string{
		"hunter22", "s3cr3t-value", "p@ss w/rd", `quo"te\back`, "ünïcödé-key", "a&b=c?d#e", "100%sure",
		"sk-abcdefghijklmnop0123", "line\nbreak", "<script>", "tab\there", "+plus+", "\u2028sep",
	} {
		f.Add(s, "context")
	}
	f.Fuzz(func(t *testing.T, secret, context string) {
		if len(secret) < MinLen || !utf8.ValidString(secret) || !utf8.ValidString(context) ||
			strings.ContainsAny(secret, "[]") || strings.Contains(Mask, secret) {
			t.Skip() // see leaks: a secret that spans a Mask is not a leak
		}
		r := New(secret)
		for name, out := range renderings(t, secret, context) {
			if got := r.String(out); leaks(got, secret) {
				t.Fatalf("%s: secret %q survives redaction:\n in: %q\nout: %q", name, secret, out, got)
			}
		}
	})
}

// renderings are the ways output may show a config value holding secret.
func renderings(t testing.TB, secret, context string) map[string]string {
	u := &url.URL{Scheme: "https", User: url.UserPassword("user", secret), Host: "example.com",
		Path: "/mcp/" + secret, RawQuery: url.Values{"api_key": {secret}, "x": {context}}.Encode()}
	userOnly := &url.URL{Scheme: "https", User: url.User(secret), Host: "h"}
	args := []string{"--token", secret, "--api-key=" + secret, context}
	urlErr := &url.Error{Op: "Post", URL: u.String(), Err: errors.New("connection refused")}
	wrapped := fmt.Errorf("upstream %q: %w", context, urlErr)
	base := map[string]string{
		"url":            u.String(),
		"url user":       userOnly.String(),
		"url redacted":   URL(u.String()),
		"args":           strings.Join(args, " "),
		"args %v":        fmt.Sprint(args),
		"args %q":        fmt.Sprintf("%q", args),
		"header":         "Authorization: Bearer " + secret,
		"env":            "API_KEY=" + secret + " " + context,
		"error":          wrapped.Error(),
		"type error":     fmt.Sprintf("%q is not a duration; write it like %q", secret, "30s"),
		"context around": context + secret + context,
	}
	out := make(map[string]string, 4*len(base))
	for name, s := range base {
		out[name] = s
		b, _ := json.Marshal(map[string]string{"v": s})
		out[name+" json"] = string(b)
		bb, _ := json.Marshal(map[string]string{"v": string(b)})
		out[name+" json json"] = string(bb)
		var text, js bytes.Buffer
		slog.New(slog.NewTextHandler(&text, nil)).Info(context, "err", errors.New(s))
		slog.New(slog.NewJSONHandler(&js, nil)).Info(context, "line", s)
		out[name+" slog text"] = text.String()
		out[name+" slog json"] = js.String()
	}
	return out
}

// FuzzShapeStages: the stages Shapes skips (shapeStages) change nothing, on
// any text: Shapes gives what all five expressions give.
func FuzzShapeStages(f *testing.F) {
	for _, s := range []string{
		`time=2026-12-06T03:48:29.970Z level=INFO msg=stderr upstream=s0 line="server run start" fixture=s0`,
		`GET https://api.example.com/v1?api_key=abc123&page=2#frag`, `dial postgres://admin:hunter22@db:5432/app`,
		`Authorization: BEARER abcdef123456`, `baſic dXNlcjpwYXNzd29yZA==`, `Bearer` + "\u212a" + ` abcdefgh`,
		"-----BEGIN RSA PRIVATE KEY-----\nMIIE", `X-AUTH-TOKEN: 0123abcd`, `ApiKey=abc123`, `{"PassWord":"hunter2"}`,
		`sk-proj-abcdefghijklmnop0123`, `ghp_abcdefghijklmnopqrstuvwxyz0123456789`, `xoxb-1234567890-abcdefghij`,
		`AKIAIOSFODNN7EXAMPLE`, `eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3`, `npm_` + strings.Repeat("a", 36),
		`author=ann pin=1234 sid=abc otp=99 pat=x mac=y`, `session=ABCDEF123`, `ünïcödé key=välue`,
		strings.Repeat("x=y ", 200) + "token=abc",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Shapes(s), shapes(s, stagesAll); got != want {
			t.Fatalf("Shapes(%q) = %q, but every stage gives %q (stages %05b)", s, got, want, shapeStages(s))
		}
	})
}

// BenchmarkShapesLogLine is Shapes on a line of the proxy's log that holds
// no credential, as most do.
func BenchmarkShapesLogLine(b *testing.B) {
	s := `time=2026-12-06T03:48:29.970Z level=INFO msg=stderr upstream=s0 line="time=2026-12-06T03:48:29.969Z level=INFO msg=\"server run start\" fixture=s0"` + "\n"
	for b.Loop() {
		_ = Shapes(s)
	}
}
