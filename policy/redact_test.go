package policy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRedactArgs(t *testing.T) {
	tests := []struct {
		name string
		args map[string]any
		want map[string]any
	}{
		{name: "nil", args: nil, want: nil},
		{
			name: "secret keys by substring and case",
			args: map[string]any{
				"api_key": "k1", "X-Auth-Token": "t1", "PASSWORD": "p", "client_secret": "s",
				"Authorization": "x", "passwd": "p2", "Cookie": "c", "aws_credentials": "c2", "apiKey": 7,
			},
			want: map[string]any{
				"api_key": Redacted, "X-Auth-Token": Redacted, "PASSWORD": Redacted, "client_secret": Redacted,
				"Authorization": Redacted, "passwd": Redacted, "Cookie": Redacted, "aws_credentials": Redacted, "apiKey": Redacted,
			},
		},
		{
			name: "other keys untouched, whatever their type",
			args: map[string]any{"path": "/tmp/x", "count": float64(3), "recursive": true, "none": nil, "author": "ann"},
			want: map[string]any{"path": "/tmp/x", "count": float64(3), "recursive": true, "none": nil, "author": "ann"},
		},
		{
			name: "a secret key hides a whole object or array",
			args: map[string]any{"credentials": map[string]any{"user": "u", "pass": "p"}, "tokens": []any{"a", "b"}},
			want: map[string]any{"credentials": Redacted, "tokens": Redacted},
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
					"headers": map[string]any{"Authorization": Redacted, "Accept": "json"},
					"items":   []any{map[string]any{"secret": Redacted, "id": 2}, "plain", []any{map[string]any{"session_token": Redacted}}},
				},
			},
		},
		{
			name: "bearer and basic credentials under any key",
			args: map[string]any{"header": "Bearer abc", "h2": "basic dXNlcjpwYXNz", "note": "bearer of news", "list": []any{"BEARER x"}},
			want: map[string]any{"header": Redacted, "h2": Redacted, "note": "bearer of news", "list": []any{Redacted}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := RedactArgs(tt.args)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("RedactArgs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRedactArgsDoesNotModifyItsInput(t *testing.T) {
	inner := map[string]any{"token": "t"}
	list := []any{map[string]any{"key": "k"}}
	args := map[string]any{"inner": inner, "list": list, "password": "p"}
	RedactArgs(args)
	want := map[string]any{"inner": map[string]any{"token": "t"}, "list": []any{map[string]any{"key": "k"}}, "password": "p"}
	if diff := cmp.Diff(want, args); diff != "" {
		t.Errorf("RedactArgs modified its input (-want +got):\n%s", diff)
	}
}
