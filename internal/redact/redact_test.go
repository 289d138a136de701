package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSecretKey(t *testing.T) {
	secret := []string{
		// the families of issue 9, in the spellings seen in the wild
		"authorization", "Authorization", "Proxy-Authorization", "auth", "x-auth", "X-Auth-Token", "authToken", "oauth_token",
		"api_key", "apiKey", "APIKEY", "x-api-key", "X-API-Key", "apikey", "access_key", "accessKey", "secretKey", "key",
		"password", "PASSWORD", "passwd", "pwd", "db_pwd", "pass", "userPass", "passphrase", "passcode",
		"secret", "client_secret", "GITHUB_TOKEN", "token", "refresh_token", "access-token",
		"session", "sessionId", "session_token", "cookie", "Set-Cookie",
		"otp", "otpCode", "totp", "jwt", "jwtToken", "id_jwt", "sig", "reqSig", "signature", "x-hub-signature",
		"private", "private_key", "privateKey", "credential", "aws_credentials", "bearer", "csrf_token", "pin", "mfa_code",
		// residue of a red-team pass over the audit log
		"refresh", "hmac", "hmacKey", "keyfile", "code_verifier", "verifier", "nonce", "salt", "priv", "pkce", "mac",
	}
	plain := []string{
		"author", "authorName", "keywords", "keyboard", "signal", "design", "passenger", "compass", "path", "name",
		"footprint", "topic", "url", "count", "pinned", "", "---", "description", "sigh",
		"macro", "machine", "salty_snack", "code", "refreshed",
	}
	for _, k := range secret {
		if !SecretKey(k) {
			t.Errorf("SecretKey(%q) = false, want true", k)
		}
	}
	for _, k := range plain {
		if SecretKey(k) {
			t.Errorf("SecretKey(%q) = true, want false", k)
		}
	}
}

func TestShapes(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"url query values", `GET https://api.example.com/v1?api_key=abc123&page=2#frag`, `GET https://api.example.com/v1?api_key=[redacted]&page=[redacted]#frag`},
		{"url userinfo", `dial postgres://admin:hunter22@db.internal:5432/app failed`, `dial postgres://[redacted]@db.internal:5432/app failed`},
		{"url in a Go error", `Post "http://127.0.0.1:1/mcp?api_key=s3cr3t": dial tcp`, `Post "http://127.0.0.1:1/mcp?api_key=[redacted]": dial tcp`},
		{"url in JSON in JSON", `"err":"Post \"http://h/mcp?k=v1234\": x"`, `"err":"Post \"http://h/mcp?k=[redacted]\": x"`},
		{"url without secrets", `see https://example.com/docs/page.html`, `see https://example.com/docs/page.html`},
		{"bearer", `Authorization: Bearer abcdef123456`, `Authorization: Bearer [redacted]`},
		{"basic", `basic dXNlcjpwYXNzd29yZA==`, `basic [redacted]`},
		{"bearer of news", `the bearer of news`, `the bearer of news`},
		{"pem private key", "k=x\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\ntail", "k=x\n-----BEGIN RSA PRIVATE KEY-----[redacted]-----END RSA PRIVATE KEY-----\ntail"},
		{"pem private key cut short", `"-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkq`, `"-----BEGIN PRIVATE KEY-----[redacted]`},
		{"pem public key", "-----BEGIN PUBLIC KEY-----\nMIIBIjAN\n-----END PUBLIC KEY-----", "-----BEGIN PUBLIC KEY-----\nMIIBIjAN\n-----END PUBLIC KEY-----"},
		{"key=value", `--api-key=abc123 --verbose`, `--api-key=[redacted] --verbose`},
		{"env pair", `GITHUB_TOKEN=ghx0123 PATH=/usr/bin`, `GITHUB_TOKEN=[redacted] PATH=/usr/bin`},
		{"header pair", `X-Api-Key: 0123abcd`, `X-Api-Key: [redacted]`},
		{"json pair", `{"password":"hunter2","user":"ann"}`, `{"password":"[redacted]","user":"ann"}`},
		{"escaped json pair", `{\"otp\": \"123456\"}`, `{\"otp\": \"[redacted]\"}`},
		{"session ids of the proxy stay", `msg="started" session=ABCDEF123`, `msg="started" session=ABCDEF123`},
		{"author stays", `author=ann`, `author=ann`},
		{"openai", `key sk-proj-abcdefghijklmnop0123 used`, `key [redacted] used`},
		{"anthropic", `sk-ant-api03-abcdefghijklmnopqrstuvwxyz`, `[redacted]`},
		{"github", `ghp_abcdefghijklmnopqrstuvwxyz0123456789 and github_pat_11ABCDEFG0123456789_abcdef`, `[redacted] and [redacted]`},
		{"slack", `xoxb-1234567890-abcdefghij`, `[redacted]`},
		{"gitlab", `glpat-abcdefghij0123456789`, `[redacted]`},
		{"aws", `AKIAIOSFODNN7EXAMPLE`, `[redacted]`},
		{"jwt", `eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U`, `[redacted]`},
		{"plain text", `upstream "files" is up with 12 tools`, `upstream "files" is up with 12 tools`},
		// Manifold's own messages name config keys as "key.path: message".
		{"config key path and its message", `proxy.toml:3:9: servers.github.env.GITHUB_PERSONAL_ACCESS_TOKEN: environment variable GITHUB_PERSONAL_ACCESS_TOKEN is not set`, `proxy.toml:3:9: servers.github.env.GITHUB_PERSONAL_ACCESS_TOKEN: environment variable GITHUB_PERSONAL_ACCESS_TOKEN is not set`},
		{"config key path in a log line", `level=ERROR msg="server left out" err="proxy.toml:7:13: servers.gh.headers.Authorization: environment variable T is not set"`, `level=ERROR msg="server left out" err="proxy.toml:7:13: servers.gh.headers.Authorization: environment variable T is not set"`},
		{"dotted key and a value that is no word", `spring.datasource.password: hunter22`, `spring.datasource.password: [redacted]`},
		{"dotted key and =", `app.token=abcdefgh`, `app.token=[redacted]`},
		{"plain key and a word", `password: swordfish`, `password: [redacted]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Shapes(tt.in)); diff != "" {
				t.Errorf("Shapes(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

// TestRedactorKnownSecrets: a known secret is hidden in every spelling it
// takes in output, and short values are not recorded.
func TestRedactorKnownSecrets(t *testing.T) {
	const secret = `p@ss w/rd"<&>ü`
	r := New(secret, "short")
	renderings := map[string]string{
		"as is":          "value " + secret + " end",
		"query escaped":  "x=" + url.QueryEscape(secret),
		"path escaped":   "/a/" + url.PathEscape(secret) + "/b",
		"userinfo":       (&url.URL{Scheme: "https", User: url.UserPassword("u", secret), Host: "h"}).String(),
		"json":           mustJSON(t, map[string]string{"v": secret}),
		"json of json":   mustJSON(t, map[string]string{"v": mustJSON(t, map[string]string{"w": secret})}),
		"go quoted":      fmt.Sprintf("%q", secret),
		"json of quoted": mustJSON(t, map[string]string{"err": fmt.Sprintf("open %q: denied", secret)}),
		"slog text":      slogText(t, "err", errors.New("open "+secret)),
		"url error":      (&url.Error{Op: "Post", URL: "http://h/mcp?q=" + url.QueryEscape(secret), Err: fs.ErrNotExist}).Error(),
	}
	for name, s := range renderings {
		got := r.String(s)
		if leaks(got, secret) {
			t.Errorf("%s: %q redacts to %q, which still holds the secret", name, s, got)
		}
		if !strings.Contains(got, Mask) {
			t.Errorf("%s: %q redacts to %q, without %s", name, s, got, Mask)
		}
	}
	if got := r.String("a short word"); got != "a short word" {
		t.Errorf("a value shorter than MinLen was recorded: %q", got)
	}
}

func TestRedactorAddAndNil(t *testing.T) {
	var nilR *Redactor
	if got, want := nilR.String("token=abc123 plain"), "token=[redacted] plain"; got != want {
		t.Errorf("nil Redactor: got %q, want %q", got, want)
	}
	r := New()
	if got := r.String("the value 0a1b2c3d4e"); got != "the value 0a1b2c3d4e" {
		t.Errorf("empty Redactor changed %q", got)
	}
	r.Add("0a1b2c3d4e")
	if got, want := r.String("the value 0a1b2c3d4e"), "the value [redacted]"; got != want {
		t.Errorf("after Add: got %q, want %q", got, want)
	}
	// A secret containing another is hidden whole.
	r.Add("0a1b2c3d4e-and-more")
	if got, want := r.String("x 0a1b2c3d4e-and-more y"), "x [redacted] y"; got != want {
		t.Errorf("longer secret: got %q, want %q", got, want)
	}
}

func TestRedactorErrorAndWriter(t *testing.T) {
	r := New("topsecret-value")
	base := fs.ErrPermission
	err := r.Error(fmt.Errorf("open topsecret-value: %w", base))
	if got, want := err.Error(), "open [redacted]: permission denied"; got != want {
		t.Errorf("Error: got %q, want %q", got, want)
	}
	if !errors.Is(err, base) {
		t.Error("the redacted error does not unwrap to the original")
	}
	if r.Error(nil) != nil {
		t.Error("Error(nil) is not nil")
	}
	var buf bytes.Buffer
	w := r.Writer(&buf)
	line := "token is topsecret-value\n"
	n, werr := w.Write([]byte(line))
	if werr != nil || n != len(line) {
		t.Errorf("Write = %d, %v; want %d, nil", n, werr, len(line))
	}
	if got, want := buf.String(), "token is [redacted]\n"; got != want {
		t.Errorf("Writer wrote %q, want %q", got, want)
	}
}

func TestURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://example.com/mcp", "https://example.com/mcp"},
		{"https://example.com/mcp?api_key=abc&v=2", "https://example.com/mcp?api_key=[redacted]&v=[redacted]"},
		{"https://user:pw@example.com/mcp", "https://[redacted]@example.com/mcp"},
		{"https://tok@example.com/mcp?x", "https://[redacted]@example.com/mcp?x"},
	}
	for _, tt := range tests {
		if got := URL(tt.in); got != tt.want {
			t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSecretsOfConfigValues(t *testing.T) {
	tests := []struct {
		name string
		got  []string
		want []string
	}{
		{"url", URLSecrets("https://u:p%40ss@h/mcp?api_key=k1&x=a%20b"), []string{"u", "p@ss", "k1", "a b"}},
		{"url without secrets", URLSecrets("https://h/mcp"), nil},
		{"credential header", PairSecrets("Authorization", "Bearer abc123"), []string{"Bearer abc123", "abc123"}},
		{"plain header", PairSecrets("Accept", "application/json"), nil},
		{"env url", PairSecrets("DATABASE_URL", "postgres://u:pw1234@db/x"), []string{"u", "pw1234"}},
		{"args", ArgSecrets([]string{"--token", "t1", "--api-key=k2", "-v", "--name", "n", "https://h/?sig=s3", "--password"}),
			[]string{"t1", "k2", "s3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.got, cmpSorted); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

var cmpSorted = cmp.Transformer("sort", func(in []string) []string {
	out := append([]string(nil), in...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
})

// TestArgs: the audit redaction, by key family and by value shape.
func TestArgs(t *testing.T) {
	tests := []struct {
		name string
		args map[string]any
		want map[string]any
	}{
		{name: "nil", args: nil, want: nil},
		{
			name: "secret keys by word and case",
			args: map[string]any{
				"api_key": "k1", "X-Auth-Token": "t1", "PASSWORD": "p", "client_secret": "s",
				"Authorization": "x", "passwd": "p2", "Cookie": "c", "aws_credentials": "c2", "apiKey": 7,
				"auth": "a", "pwd": "p3", "pass": "p4", "session": "s2", "otp": 123456, "jwt": "j",
				"sig": "s3", "private": "k", "x-api-key": "k3", "signature": "s4", "token": "t", "sessionId": "s5",
			},
			want: map[string]any{
				"api_key": Mask, "X-Auth-Token": Mask, "PASSWORD": Mask, "client_secret": Mask,
				"Authorization": Mask, "passwd": Mask, "Cookie": Mask, "aws_credentials": Mask, "apiKey": Mask,
				"auth": Mask, "pwd": Mask, "pass": Mask, "session": Mask, "otp": Mask, "jwt": Mask,
				"sig": Mask, "private": Mask, "x-api-key": Mask, "signature": Mask, "token": Mask, "sessionId": Mask,
			},
		},
		{
			name: "other keys untouched, whatever their type",
			args: map[string]any{"path": "/tmp/x", "count": float64(3), "recursive": true, "none": nil, "author": "ann", "keywords": "a b"},
			want: map[string]any{"path": "/tmp/x", "count": float64(3), "recursive": true, "none": nil, "author": "ann", "keywords": "a b"},
		},
		{
			name: "a secret key hides a whole object or array",
			args: map[string]any{"credentials": map[string]any{"user": "u", "pass": "p"}, "tokens": []any{"a", "b"}},
			want: map[string]any{"credentials": Mask, "tokens": Mask},
		},
		{
			name: "nested objects and arrays",
			args: map[string]any{
				"request": map[string]any{
					"url":     "https://example.invalid",
					"headers": map[string]any{"Authorization": "Bearer abc", "Accept": "json"},
					"items":   []any{map[string]any{"secret": 1, "id": 2}, "plain", []any{map[string]any{"session_token": "s"}}},
				},
			},
			want: map[string]any{
				"request": map[string]any{
					"url":     "https://example.invalid",
					"headers": map[string]any{"Authorization": Mask, "Accept": "json"},
					"items":   []any{map[string]any{"secret": Mask, "id": 2}, "plain", []any{map[string]any{"session_token": Mask}}},
				},
			},
		},
		{
			name: "credential values under any key",
			args: map[string]any{
				"header": "Bearer abc", "h2": "basic dXNlcjpwYXNz", "note": "bearer of news", "list": []any{"BEARER x"},
				"text":  "use sk-abcdefghijklmnop0123 please",
				"link":  "https://u:pw@example.com/x?code=abc",
				"value": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.sig0123",
			},
			want: map[string]any{
				"header": Mask, "h2": Mask, "note": "bearer of news", "list": []any{Mask},
				"text":  "use " + Mask + " please",
				"link":  "https://" + Mask + "@example.com/x?code=" + Mask,
				"value": Mask,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Args(tt.args)); diff != "" {
				t.Errorf("Args (-want +got):\n%s", diff)
			}
		})
	}
}

func TestArgsDoesNotModifyItsInput(t *testing.T) {
	inner := map[string]any{"token": "t"}
	list := []any{map[string]any{"key": "k"}}
	args := map[string]any{"inner": inner, "list": list, "password": "p"}
	Args(args)
	want := map[string]any{"inner": map[string]any{"token": "t"}, "list": []any{map[string]any{"key": "k"}}, "password": "p"}
	if diff := cmp.Diff(want, args); diff != "" {
		t.Errorf("Args modified its input (-want +got):\n%s", diff)
	}
}

// leaks reports whether out holds secret in any spelling of spellings.
func leaks(out, secret string) bool {
	for _, f := range spellings(secret) {
		if strings.Contains(out, f) {
			return true
		}
	}
	return false
}

// spellings is what a test looks for, independent of [Forms]: secret as is,
// percent-encoded (query, path, userinfo) and JSON-escaped or Go-quoted up to
// four times over.
func spellings(secret string) []string {
	level := []string{secret, url.QueryEscape(secret), url.PathEscape(secret),
		url.UserPassword("u", secret).String()[len("u:"):]}
	var out []string
	for range 5 {
		var next []string
		for _, s := range level {
			out = append(out, s)
			j, _ := json.Marshal(s)
			q := strconv.Quote(s)
			next = append(next, string(j[1:len(j)-1]), q[1:len(q)-1])
		}
		level = next
	}
	return out
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func slogText(t testing.TB, key string, v any) string {
	t.Helper()
	var b bytes.Buffer
	slog.New(slog.NewTextHandler(&b, nil)).Info("m", key, v)
	return b.String()
}
