package wire_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/troupe-dev/troupe/"

// deps lists the troupe packages the packages pkgs import, directly or
// not, pkgs themselves included.
func deps(t *testing.T, pkgs ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-deps"}, pkgs...)...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	var own []string
	for _, p := range strings.Fields(string(out)) {
		if rest, ok := strings.CutPrefix(p, module); ok {
			own = append(own, rest)
		}
	}
	return own
}

// The wire is the leaf both sides of the plugin boundary import: it
// imports neither the sdk nor the host, the sdk's packages never reach the
// host, and the host never reaches the sdk's plain types or its server.
func TestTheWireIsALeafBetweenTheHostAndTheSDK(t *testing.T) {
	assert.Equal(t, []string{"sdk/fault", "sdk/wire/proto/troupe/plugin/v1", "sdk/wire"}, deps(t, "."),
		"the wire imports the failure codes and its generated code, nothing else of troupe")
	assert.Equal(t, []string{"sdk/fault"}, deps(t, "../fault"), "the failure codes import nothing of troupe")
	for _, p := range deps(t, "../...") {
		assert.False(t, p == "plugins" || strings.HasPrefix(p, "plugins/"), "the sdk reaches the host's %s", p)
	}
	host := deps(t, "../../plugins")
	assert.False(t, slices.Contains(host, "sdk"), "the host imports the sdk's plain types")
	assert.False(t, slices.Contains(host, "sdk/serve"), "the host imports the plugin side's server")
	assert.Contains(t, host, "sdk/wire")
}
