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
