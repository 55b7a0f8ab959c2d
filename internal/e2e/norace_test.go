//go:build !race

package e2e

// raceDetector says that this test binary runs under the race detector.
const raceDetector = false
