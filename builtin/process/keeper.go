package process

import "sync/atomic"

// keepers is set once the program has called ServeIfKeeper as itself:
// its executable can then be re-executed as a keeper.
var keepers atomic.Bool

// ServeIfKeeper makes this program able to keep the processes it starts:
// call it first in main (and in TestMain), before anything else runs.
// When the process was started as a keeper, it keeps its command and
// exits with the command's status; otherwise it returns at once, and Kept
// uses keepers from then on.
func ServeIfKeeper() {
	if serveKeeper() {
		return
	}
	keepers.Store(true)
}
