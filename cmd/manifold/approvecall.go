package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/manifold-mcp/manifold/internal/cluster"
	"github.com/manifold-mcp/manifold/internal/config"
	"github.com/manifold-mcp/manifold/internal/spawn"
	"github.com/manifold-mcp/manifold/proxy"
)

// approvalDir is where a serving manifold leaves the calls that wait for
// `manifold approve-call` and where that command approves them: a folder
// of the status folder, private to the user (0700). Empty when there is
// no cache folder.
func approvalDir() string {
	if d := runDir(); d != "" {
		return filepath.Join(d, "approvals")
	}
	return ""
}

// cmdApproveCall approves one call that a running manifold holds for a
// person's approval (README "Approval bound to the call"): it shows the
// call the proxy recorded and, once the person agrees, leaves the approval
// file the proxy looks for when the model calls again. No MCP request can
// do this: it is a file in the user's private status folder, written by a
// command the person runs.
func cmdApproveCall(_ context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var c common
	fs := newFlags("approve-call", "approve-call [--yes] ID", levelOneShot, stderr, &c)
	yes := fs.Bool("yes", false, "approve without asking")
	pos, ok, err := parse(fs, args)
	if !ok {
		return err
	}
	if len(pos) != 1 {
		return argError("approve-call", "%d arguments %q; want one approval id, as the refused call's message names it (ap-...)", len(pos), pos)
	}
	id := pos[0]
	if !proxy.ValidApprovalID(id) {
		return usageError("approve-call: %q is not an approval id; copy the id (ap- and 26 letters and digits) from the message of the refused call", id)
	}
	if cfg, err := loadConfig(c); err == nil && cfg.Cluster.Redis != "" {
		return approveShared(cfg, id, *yes, stdin, stdout, stderr)
	}
	dir := approvalDir()
	if dir == "" {
		return errors.New("approve-call: there is no cache folder, so no running manifold can take approvals from the command line")
	}
	v, err := readApproval(dir, id)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, v.Text())
	fmt.Fprintln(stdout)
	if !*yes && !confirm(stdin, stderr, "Approve this call?") {
		fmt.Fprintln(stderr, "Nothing approved; run again and answer y, or with --yes.")
		return exitError{code: 1}
	}
	f, err := os.OpenFile(proxy.ApprovedFile(dir, id), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case errors.Is(err, os.ErrExist):
		return fmt.Errorf("approve-call: %s is approved already; the model's next call with the same arguments runs once", id)
	case err != nil:
		return fmt.Errorf("approve-call: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("approve-call: %w", err)
	}
	fmt.Fprintf(stdout, "Approved %s: the next call of %s with exactly these arguments runs once, until %s. Tell the model to call it again.\n",
		id, v.Tool, v.Expires.Local().Format(time.DateTime))
	return nil
}

// readApproval reads the call that waits for approval id in dir.
func readApproval(dir, id string) (proxy.ApprovalView, error) {
	var v proxy.ApprovalView
	b, err := os.ReadFile(proxy.ApprovalFile(dir, id))
	if errors.Is(err, fs.ErrNotExist) {
		return v, fmt.Errorf("approve-call: no call waits for approval %s: it was used, it expired, its manifold stopped, or it belongs to another user; ask the model to call the tool again for a new id", id)
	}
	if err != nil {
		return v, fmt.Errorf("approve-call: %w", err)
	}
	if err := json.Unmarshal(b, &v); err != nil || v.ID != id {
		return v, fmt.Errorf("approve-call: the file of approval %s is damaged (%s); ask the model to call the tool again for a new id", id, proxy.ApprovalFile(dir, id))
	}
	if time.Now().After(v.Expires) {
		return v, fmt.Errorf("approve-call: approval %s expired at %s; ask the model to call the tool again for a new id", id, v.Expires.Local().Format(time.DateTime))
	}
	if !spawn.Alive(v.PID) {
		return v, fmt.Errorf("approve-call: the manifold that asked for approval %s (pid %d) is not running any more", id, v.PID)
	}
	return v, nil
}

// approveShared approves id in the [cluster] Redis that the replicas share:
// the retried call runs once, on whichever replica it reaches.
func approveShared(cfg *config.Config, id string, yes bool, stdin io.Reader, stdout, stderr io.Writer) error {
	st, err := clusterStore(cfg, nil)
	if err != nil {
		return fmt.Errorf("approve-call: %w", err)
	}
	defer st.Close()
	ctx := context.Background()
	raw, err := st.View(ctx, id)
	if errors.Is(err, cluster.ErrNoApproval) {
		return fmt.Errorf("approve-call: no call waits for approval %s in the shared store ([cluster] of %s): it was used, it expired, or it belongs to another deployment; ask the model to call the tool again for a new id", id, cfg.Path)
	}
	if err != nil {
		return fmt.Errorf("approve-call: %w; check that the [cluster] Redis of %s is up", err, cfg.Path)
	}
	var v proxy.ApprovalView
	if err := json.Unmarshal(raw, &v); err != nil || v.ID != id {
		return fmt.Errorf("approve-call: the shared record of approval %s is damaged; ask the model to call the tool again for a new id", id)
	}
	fmt.Fprintln(stdout, v.Text())
	fmt.Fprintln(stdout)
	if !yes && !confirm(stdin, stderr, "Approve this call?") {
		fmt.Fprintln(stderr, "Nothing approved; run again and answer y, or with --yes.")
		return exitError{code: 1}
	}
	granted, err := st.Grant(ctx, id)
	switch {
	case errors.Is(err, cluster.ErrNoApproval):
		return fmt.Errorf("approve-call: approval %s was used or expired meanwhile; ask the model to call the tool again for a new id", id)
	case err != nil:
		return fmt.Errorf("approve-call: %w; check that the [cluster] Redis of %s is up", err, cfg.Path)
	case !granted:
		return fmt.Errorf("approve-call: %s is approved already; the model's next call with the same arguments runs once", id)
	}
	fmt.Fprintf(stdout, "Approved %s: the next call of %s with exactly these arguments runs once, on any replica, until %s. Tell the model to call it again.\n",
		id, v.Tool, v.Expires.Local().Format(time.DateTime))
	return nil
}
