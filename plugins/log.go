package plugins

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// newHCLogger returns the hclog logger go-plugin logs to: JSON lines that
// hclogWriter turns back into records of log, so that go-plugin's messages
// and the plugin's own log lines land in the proxy's log (stderr), never on
// its stdout.
func newHCLogger(log *slog.Logger) hclog.Logger {
	level := hclog.Info
	if log.Enabled(context.Background(), slog.LevelDebug) {
		level = hclog.Debug
	}
	return hclog.New(&hclog.LoggerOptions{
		Name:       "plugin",
		Output:     &hclogWriter{log: log},
		JSONFormat: true,
		Level:      level,
	})
}

// hclogWriter receives hclog's JSON lines, one entry per Write.
type hclogWriter struct{ log *slog.Logger }

func (w *hclogWriter) Write(p []byte) (int, error) {
	for line := range bytes.Lines(p) {
		w.line(bytes.TrimSpace(line))
	}
	return len(p), nil
}

func (w *hclogWriter) line(line []byte) {
	if len(line) == 0 {
		return
	}
	var entry map[string]any
	if err := json.Unmarshal(line, &entry); err != nil {
		w.log.Info(string(line))
		return
	}
	msg, _ := entry["@message"].(string)
	levelName, _ := entry["@level"].(string)
	level := slog.LevelInfo
	switch levelName {
	case "trace":
		level = slog.LevelDebug - 4
	case "debug":
		level = slog.LevelDebug
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	}
	attrs := make([]any, 0, 2*len(entry))
	if m, ok := entry["@module"].(string); ok && m != "" {
		attrs = append(attrs, "module", m)
	}
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range entry {
			// "plugin" and "timestamp" repeat what the record has.
			if strings.HasPrefix(k, "@") || k == "plugin" || k == "timestamp" {
				continue
			}
			if !yield(k) {
				return
			}
		}
	}) {
		attrs = append(attrs, k, entry[k])
	}
	w.log.Log(context.Background(), level, msg, attrs...)
}

// lineLogger logs what a plugin writes to its stdout or stderr after it
// started serving (go-plugin forwards both), one record per line.
type lineLogger struct {
	log    *slog.Logger
	level  slog.Level
	stream string

	mu  sync.Mutex
	buf []byte // guarded by mu; an unterminated line
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.emit(l.buf[:i])
		l.buf = l.buf[i+1:]
	}
	if len(l.buf) > tailBytes { // a very long line: log it in pieces
		l.emit(l.buf)
		l.buf = l.buf[:0]
	}
	return len(p), nil
}

// emit logs one line; l.mu is held.
func (l *lineLogger) emit(line []byte) {
	line = bytes.TrimRight(line, "\r")
	if len(line) == 0 {
		return
	}
	l.log.Log(context.Background(), l.level, "plugin output", "stream", l.stream, "line", string(line))
}
