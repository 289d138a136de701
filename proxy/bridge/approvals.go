package bridge

import (
	"encoding/json"
	"errors"
)

// This file is the part of a modern client's parked call in an approval
// (proxy/confirm): the digest it is bound to, and its abort.

// SetConfirm binds the parked call to the digest of the call the person is
// asked to approve: a retry with other arguments is refused (resumeCall).
func (pc *Call) SetConfirm(digest string) {
	pc.mu.Lock()
	pc.confirm = digest
	pc.mu.Unlock()
}

// ConfirmDigest returns the digest SetConfirm bound, if any.
func (pc *Call) ConfirmDigest() string {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.confirm
}

// abort ends a parked call for the reason why: nothing more is delivered,
// and what waits on its context ends.
func (pc *Call) Abort(why string) {
	pc.mu.Lock()
	if !pc.done {
		pc.aborted = why
		pc.endLocked()
	}
	pc.mu.Unlock()
	pc.cancel()
}

// AbortReason returns why abort ended the call; empty if it did not, or pc
// is nil.
func (pc *Call) AbortReason() string {
	if pc == nil {
		return ""
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.aborted
}

// checkConfirmRetry refuses the retry of a parked call awaiting approval
// whose arguments differ from those the person was asked about, ending the
// call: what was approved is one exact call.
func (br *Bridges) checkConfirmRetry(pc *Call, principal, name string, fields map[string]json.RawMessage) error {
	want := pc.ConfirmDigest()
	if want == "" {
		return nil
	}
	if digest, err := br.opts.Digest(principal, name, fields["arguments"]); err == nil && digest == want {
		return nil
	}
	pc.Abort("arguments changed after the approval was asked")
	return errors.New("its arguments differ from those of the call the person was asked to approve, so the call was dropped and nothing was executed; call the tool again, without requestState, to ask for approval of the new arguments")
}
