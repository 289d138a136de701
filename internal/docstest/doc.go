// Package docstest tests the documentation like code: README.md and the
// pages of docs/ have relative links that resolve (files and GitHub heading
// anchors), config keys that the decoder of internal/config accepts, and
// `manifold` commands and flags that the built binary has; every page links
// back to the README and the README to every page.
//
// It holds tests only, and must not be imported: the docs depend on the
// code, never the code on the docs.
package docstest
