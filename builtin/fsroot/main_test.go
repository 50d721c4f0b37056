package fsroot_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Tests run reads in goroutines to catch blocking on FIFOs; none may be
// left behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
