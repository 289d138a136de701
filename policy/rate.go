package policy

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Rate is a call rate limit: at most N calls in any window of length Per.
// The zero Rate is no limit.
type Rate struct {
	N   int
	Per time.Duration
}

// ParseRate parses "N/period", where N is a positive integer and period is
// second (s, sec), minute (m, min), hour (h, hr) or a Go duration such as
// "10s" or "1m30s": "30/minute", "5/second", "100/1h".
func ParseRate(s string) (Rate, error) {
	n, per, ok := strings.Cut(s, "/")
	if !ok {
		return Rate{}, fmt.Errorf(`rate %q is not N/period; write it like "30/minute", "5/second" or "100/1h"`, s)
	}
	count, err := strconv.Atoi(strings.TrimSpace(n))
	if err != nil || count < 1 {
		return Rate{}, fmt.Errorf(`rate %q: %q is not a positive whole number of calls; write it like "30/minute"`, s, strings.TrimSpace(n))
	}
	per = strings.TrimSpace(per)
	var d time.Duration
	switch per {
	case "second", "sec", "s":
		d = time.Second
	case "minute", "min", "m":
		d = time.Minute
	case "hour", "hr", "h":
		d = time.Hour
	default:
		d, err = time.ParseDuration(per)
		if err != nil || d <= 0 {
			return Rate{}, fmt.Errorf(`rate %q: %q is not a period; use second, minute, hour or a positive duration like "10s"`, s, per)
		}
	}
	return Rate{N: count, Per: d}, nil
}

// IsZero reports whether r is no limit.
func (r Rate) IsZero() bool { return r.N <= 0 || r.Per <= 0 }

// String formats r as ParseRate reads it: "30/minute", "5/10s".
func (r Rate) String() string {
	per := r.Per.String()
	switch r.Per {
	case time.Second:
		per = "second"
	case time.Minute:
		per = "minute"
	case time.Hour:
		per = "hour"
	}
	return strconv.Itoa(r.N) + "/" + per
}

// stricter reports whether r allows fewer calls than o on average, or as
// many with a smaller burst.
func (r Rate) stricter(o Rate) bool {
	a := float64(r.N) * float64(o.Per)
	b := float64(o.N) * float64(r.Per)
	return a < b || a == b && r.N < o.N
}
