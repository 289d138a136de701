package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/manifold-mcp/manifold/internal/config"
	"github.com/manifold-mcp/manifold/policy"
)

func cmdExplain(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var c common
	fs := newFlags("explain", "explain [--config FILE] [--as IDENTITY [--group NAME]...] NAME|URI...", levelOneShot, stderr, &c)
	as := fs.String("as", "", `decide for this identity, as its HTTP requests are: "user:SUBJECT" (a token's sub), "key:NAME" (an API key of auth.api_keys_file, with its groups) or "group:NAME"`)
	var groups stringList
	fs.Var(&groups, "group", "with --as, a group (or role) the identity is in; repeat for more")
	pos, ok, err := parse(fs, args)
	if !ok {
		return err
	}
	if len(pos) == 0 {
		return argError("explain", "%d arguments %q; want one exposed tool or prompt name, or one resource URI", len(pos), pos)
	}
	if *as == "" && len(groups) > 0 {
		return argError("explain", "--group needs --as: the identity whose groups they are")
	}
	c.oneShot = true
	if len(pos) == 1 {
		c.only = pos[0]
	}
	p, cfg, err := startProxy(ctx, c, levelOneShot, stderr)
	if err != nil {
		return err
	}
	defer p.Close()
	if err := awaitReady(ctx, p, stderr); err != nil {
		return err
	}
	var who *policy.Identity
	if *as != "" {
		id, err := explainIdentity(*as, groups, cfg)
		if err != nil {
			return err
		}
		who = &id
	}
	for _, name := range pos {
		var text string
		if who != nil {
			text, err = p.ExplainAs(name, *who)
		} else {
			text, err = p.Explain(name)
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, text)
	}
	return nil
}

// explainIdentity is the identity of explain --as and --group: a subject, an
// API key of the config's keys file with its groups, or a group, and the
// groups given.
func explainIdentity(as string, groups []string, cfg *config.Config) (policy.Identity, error) {
	p, err := policy.ParsePrincipal(as)
	if err != nil {
		return policy.Identity{}, argError("explain", "--as %v", err)
	}
	var id policy.Identity
	switch p.Kind {
	case policy.PrincipalUser:
		id.User = p.Name
	case policy.PrincipalKey:
		id.Key = p.Name
		found := false
		for _, k := range cfg.Auth.APIKeys {
			if k.Name == p.Name {
				id.Groups, found = slices.Clone(k.Groups), true
			}
		}
		if !found {
			return policy.Identity{}, argError("explain", "--as %s: no API key of that name in auth.api_keys_file (%s); use a key's name from that file", as, cmp.Or(cfg.Auth.APIKeysFile, "not set"))
		}
	case policy.PrincipalGroup:
		id.Groups = []string{p.Name}
	}
	for _, g := range groups {
		gp, err := policy.ParsePrincipal("group:" + g)
		if err != nil {
			return policy.Identity{}, argError("explain", "--group %v", err)
		}
		if !slices.Contains(id.Groups, gp.Name) {
			id.Groups = append(id.Groups, gp.Name)
		}
	}
	return id, nil
}
