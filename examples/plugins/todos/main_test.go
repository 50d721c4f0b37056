package main

import (
	"testing"

	"go.uber.org/goleak"
)

// The conformance suite calls the tool and runs the loop from goroutines:
// none may outlive the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
