package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/troupe-dev/troupe/agenttypes"
)

// changesSummary says, after a run, what it changed and how to look at,
// apply or drop it; "" when it changed nothing.
func changesSummary(id string, ch *agenttypes.Changes) string {
	if ch.Empty() {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "changed %s (+%d −%d) on branch %s:\n", plural(ch.Files(), "file", "files"), ch.Insertions, ch.Deletions, ch.Branch)
	if ch.Diffstat != "" {
		for _, line := range strings.Split(strings.TrimRight(ch.Diffstat, "\n"), "\n") {
			fmt.Fprintf(&b, "  %s\n", line)
		}
	}
	fmt.Fprintf(&b, "your tree is untouched; 'troupe runs diff %s' shows the changes, 'troupe runs apply %s' applies them, 'troupe runs discard %s' drops them", id, id, id)
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// writePatch copies a run's patch file to w.
func writePatch(w io.Writer, id string, ch *agenttypes.Changes) error {
	if ch.Empty() {
		return nil
	}
	f, err := os.Open(ch.Patch)
	if err != nil {
		return fmt.Errorf("run %s: its patch %s cannot be read (%w); 'troupe runs discard %s' removes what is left of it", id, ch.Patch, unwrapPath(err), id)
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}
