package proxy

import "testing"

func TestHostAllowed(t *testing.T) {
	tests := []struct {
		host    string
		allowed []string
		want    bool
	}{
		{host: "localhost:7777", want: true},
		{host: "127.0.0.1:7777", want: true},
		{host: "[::1]:7777", want: true},
		{host: "LOCALHOST", want: true},
		{host: "127.0.0.2:80", want: true},
		{host: "evil.example", want: false},
		{host: "evil.example:7777", want: false},
		{host: "localhost.evil.example", want: false},
		{host: "manifold.lan:7777", allowed: []string{"manifold.lan"}, want: true},
		{host: "other.lan:7777", allowed: []string{"manifold.lan"}, want: false},
		{host: "", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			if got := hostAllowed(tt.host, tt.allowed); got != tt.want {
				t.Errorf("hostAllowed(%q, %q) = %v, want %v", tt.host, tt.allowed, got, tt.want)
			}
		})
	}
}

func TestOriginAllowed(t *testing.T) {
	tests := []struct {
		origin  string
		allowed []string
		want    bool
	}{
		{origin: "http://localhost:1234", want: true},
		{origin: "https://127.0.0.1", want: true},
		{origin: "http://[::1]:3000", want: true},
		{origin: "http://evil.example", want: false},
		{origin: "http://localhost.evil.example", want: false},
		{origin: "null", want: false},
		{origin: "file://", want: false},
		{origin: "https://app.example", allowed: []string{"https://app.example/"}, want: true},
		{origin: "https://app.example:8443", allowed: []string{"https://app.example"}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.origin, func(t *testing.T) {
			if got := originAllowed(tt.origin, tt.allowed); got != tt.want {
				t.Errorf("originAllowed(%q, %q) = %v, want %v", tt.origin, tt.allowed, got, tt.want)
			}
		})
	}
}
