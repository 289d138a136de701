// Package guard holds the call-time limits beside policy.Decide: rate
// limits, spend caps and argument limits before a call is sent, and the
// filters of its result (masking the config's secrets, counting spend,
// labelling data, cutting to max_result_bytes). It decides nothing about
// visibility or permission (package policy does), and imports neither the
// proxy nor a face: what it needs of a call comes as parameters.
package guard
