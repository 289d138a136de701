// Package archtest holds the test that keeps ARCHITECTURE §1's dependency
// direction true: each core package's transitive imports, listed with
// `go list -deps`, are checked against what it may import, so a wrong import
// fails CI. It has no non-test code and nothing may import it.
package archtest
