package fsroot_test

import (
	"go/build"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fsroot is imported by agenttypes, manager, the tools, the providers and
// the command line, so it must import none of them (nor anything else of
// troupe's): otherwise a dependency turns around.
func TestImportsNothingOfTroupe(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	require.NoError(t, err)
	for _, imp := range pkg.Imports {
		require.False(t, strings.HasPrefix(imp, "github.com/troupe-dev/troupe/"), "fsroot imports %s", imp)
	}
}
