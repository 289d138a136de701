package policy

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseRate(t *testing.T) {
	tests := []struct {
		name    string
		s       string
		want    Rate
		wantErr string
	}{
		{name: "per minute", s: "30/minute", want: Rate{N: 30, Per: time.Minute}},
		{name: "per second", s: "5/second", want: Rate{N: 5, Per: time.Second}},
		{name: "per hour", s: "1000/hour", want: Rate{N: 1000, Per: time.Hour}},
		{name: "short units", s: "1/s", want: Rate{N: 1, Per: time.Second}},
		{name: "min and hr", s: "2/min", want: Rate{N: 2, Per: time.Minute}},
		{name: "hr", s: "2/hr", want: Rate{N: 2, Per: time.Hour}},
		{name: "duration", s: "5/10s", want: Rate{N: 5, Per: 10 * time.Second}},
		{name: "compound duration", s: "100/1h30m", want: Rate{N: 100, Per: 90 * time.Minute}},
		{name: "spaces", s: " 30 / minute ", want: Rate{N: 30, Per: time.Minute}},
		{name: "no slash", s: "30", wantErr: `rate "30" is not N/period; write it like "30/minute", "5/second" or "100/1h"`},
		{name: "zero count", s: "0/minute", wantErr: `rate "0/minute": "0" is not a positive whole number of calls; write it like "30/minute"`},
		{name: "negative count", s: "-1/minute", wantErr: `rate "-1/minute": "-1" is not a positive whole number of calls; write it like "30/minute"`},
		{name: "fractional count", s: "1.5/second", wantErr: `rate "1.5/second": "1.5" is not a positive whole number of calls; write it like "30/minute"`},
		{name: "unknown unit", s: "30/fortnight", wantErr: `rate "30/fortnight": "fortnight" is not a period; use second, minute, hour or a positive duration like "10s"`},
		{name: "plural unit", s: "30/minutes", wantErr: `rate "30/minutes": "minutes" is not a period; use second, minute, hour or a positive duration like "10s"`},
		{name: "zero duration", s: "3/0s", wantErr: `rate "3/0s": "0s" is not a period; use second, minute, hour or a positive duration like "10s"`},
		{name: "empty", s: "", wantErr: `rate "" is not N/period; write it like "30/minute", "5/second" or "100/1h"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseRate(tt.s)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if gotErr != tt.wantErr {
				t.Fatalf("ParseRate(%q) error = %q, want %q", tt.s, gotErr, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseRate(%q) (-want +got):\n%s", tt.s, diff)
			}
		})
	}
}

func TestRateString(t *testing.T) {
	tests := []struct {
		rate Rate
		want string
	}{
		{rate: Rate{N: 30, Per: time.Minute}, want: "30/minute"},
		{rate: Rate{N: 5, Per: time.Second}, want: "5/second"},
		{rate: Rate{N: 9, Per: time.Hour}, want: "9/hour"},
		{rate: Rate{N: 5, Per: 10 * time.Second}, want: "5/10s"},
	}
	for _, tt := range tests {
		got := tt.rate.String()
		if got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.rate, got, tt.want)
		}
		back, err := ParseRate(got)
		if err != nil || back != tt.rate {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", got, back, err, tt.rate)
		}
	}
}

func TestRateStricter(t *testing.T) {
	tests := []struct {
		name string
		a, b Rate
		want bool
	}{
		{name: "lower average", a: Rate{N: 30, Per: time.Minute}, b: Rate{N: 1, Per: time.Second}, want: true},
		{name: "higher average", a: Rate{N: 1, Per: time.Second}, b: Rate{N: 30, Per: time.Minute}, want: false},
		{name: "same average, smaller burst", a: Rate{N: 1, Per: time.Second}, b: Rate{N: 60, Per: time.Minute}, want: true},
		{name: "same average, larger burst", a: Rate{N: 60, Per: time.Minute}, b: Rate{N: 1, Per: time.Second}, want: false},
		{name: "equal", a: Rate{N: 5, Per: time.Second}, b: Rate{N: 5, Per: time.Second}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.a.stricter(tt.b); got != tt.want {
				t.Errorf("%v.stricter(%v) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
		})
	}
}
