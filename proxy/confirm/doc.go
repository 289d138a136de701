// Package confirm has a person approve one call before it runs (a policy
// rule's confirm): the digest that binds an approval to the caller, the
// tool and its exact arguments; the approvals that wait for `manifold
// approve-call`, in a folder or a store shared by replicas; the
// elicitation that asks the person; and the one-time pages of URL-mode
// approvals. It decides nothing about which calls need approval (package
// policy does), and imports neither the proxy nor a face: a modern
// client's parked call is reached through the hooks the root gives it
// (Options.Parked).
package confirm
