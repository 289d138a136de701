//go:build race

package e2e

// raceEnabled reports that the tests run with -race, so manifold is built
// with it too.
const raceEnabled = true
