// Package catalog is the immutable merged snapshot of every server's
// lists: the exposed names, the definitions, each item's policy decision
// and its views per identity, the pins held for review, and the tools/list
// pages. A Builder makes one from each server's listing; the root keeps
// the snapshot in force and swaps it whole.
//
// It must not know the root (package proxy), a face, a backend's process
// or the SDK's server: what it needs of them it is handed as plain values.
package catalog
