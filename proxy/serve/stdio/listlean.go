package stdio

import (
	"context"

	"github.com/manifold-mcp/manifold/proxy/era"
	"github.com/manifold-mcp/manifold/proxy/internal/wire"
)

// list serves the stdio tools/list request f on the lean path if its answer
// is prepared, and reports whether it did. The answer is written before the
// next line is read; nothing of the line is kept.
func (l *lean) list(ctx context.Context, f wire.Frame) bool {
	modern, ok := era.Lean(f.Params)
	if !ok {
		return false
	}
	resp, ok := l.c.LeanList(ctx, l.ss, f.ID, f.Params, modern)
	if !ok {
		return false
	}
	_, _ = l.out.Write(append(resp, '\n'))
	return true
}
