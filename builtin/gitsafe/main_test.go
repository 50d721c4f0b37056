package gitsafe_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every git call is a process with pipes read by goroutines: none may
// outlive the call.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
