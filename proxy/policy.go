package proxy

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/policy"
	cat "github.com/manifold-mcp/manifold/proxy/catalog"
)

// This file applies the policy (ARCHITECTURE §4): one decision function,
// policy.Rules.Decide, decides visibility when the catalog is built and
// permission at call time; hidden items are left out of the catalog, so a call
// by name gets the same answer as for a name that does not exist.

// SetPolicy replaces the rules (after a policy file or the config changed);
// the catalog is rebuilt and clients get list_changed where it changed. nil
// allows everything.
func (s *Server) SetPolicy(r *policy.Rules) {
	s.rules.Store(r)
	// Definitions derived under the old rules are not reused, even when r
	// is the same value: it may have been changed in place.
	s.builder.catMu.Lock()
	s.builder.derived = nil
	s.builder.catMu.Unlock()
	s.rebuild()
}

// toPolicyAnnotations converts an upstream tool's annotations
// (catalog.ToPolicyAnnotations).
func toPolicyAnnotations(a *mcp.ToolAnnotations) *policy.Annotations {
	return cat.ToPolicyAnnotations(a)
}
