package tools_test

import (
	"testing"

	"go.uber.org/goleak"
)

// grep and glob walk with worker goroutines: none may outlive a call.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
