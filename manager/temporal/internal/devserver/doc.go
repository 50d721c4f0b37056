// Package devserver starts a Temporal development server (the Temporal
// CLI's `temporal server start-dev`) for tests: headless, in memory, on
// loopback ports of its own, in a process group of its own that is killed
// and checked gone when the test ends.
//
// Tests that use it carry the integration build tag; `make integration`
// builds the CLI at the pinned version and names it in TROUPE_TEMPORAL_BIN.
// Without that variable, Start skips the test.
//
// It runs on unix systems only: it stops the server by its process group.
package devserver
