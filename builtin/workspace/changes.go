package workspace

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/gitsafe"
)

// diffFlags make every diff of changes the same whatever the repository
// configures: no external tools, no textconv, no colour, no rename
// guessing, the usual a/ and b/ prefixes, paths relative to the top and
// in git's order.
var diffFlags = []string{"--no-ext-diff", "--no-textconv", "--no-color", "--no-renames", "--no-relative",
	"--src-prefix=a/", "--dst-prefix=b/", "-O" + os.DevNull}

// changes describes what head changed since the base, and writes the
// binary patch under the state directory.
func (w *Workspace) changes(ctx context.Context, g *gitsafe.Git, head string) (*agenttypes.Changes, error) {
	ch := &agenttypes.Changes{Dir: w.rec.Dir, Repo: w.rec.Repo, Branch: w.rec.Branch, Base: w.rec.Base, Head: head}
	if head == w.rec.Base {
		return ch, nil
	}
	diff := func(args ...string) ([]byte, error) {
		args = append(append([]string{"diff"}, diffFlags...), args...)
		return g.Output(ctx, append(args, w.rec.Base, head, "--")...)
	}
	status, err := diff("--name-status", "-z")
	if err != nil {
		return nil, fmt.Errorf("listing the changes: %w", err)
	}
	parseNameStatus(ch, status)
	if ch.Empty() {
		return ch, nil
	}
	numstat, err := diff("--numstat", "-z")
	if err != nil {
		return nil, fmt.Errorf("counting the changes: %w", err)
	}
	ch.Insertions, ch.Deletions = parseNumstat(numstat)
	stat, err := diff("--stat")
	if err != nil {
		return nil, fmt.Errorf("summing up the changes: %w", err)
	}
	ch.Diffstat = strings.TrimRight(string(stat), "\n")
	if ch.Patch, err = w.writePatch(ctx, g, head); err != nil {
		return nil, err
	}
	return ch, nil
}

// writePatch writes the changes from the base to head as a binary git
// patch, which git apply takes on the base, and returns its path.
func (w *Workspace) writePatch(ctx context.Context, g *gitsafe.Git, head string) (string, error) {
	path := w.p.patchPath(w.rec.Name)
	f, err := os.CreateTemp(w.p.dirs.patches, ".new-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	args := append(append([]string{"diff", "--binary", "--full-index"}, diffFlags...), w.rec.Base, head, "--")
	err = g.Run(ctx, nil, f, args...)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return "", fmt.Errorf("writing the patch: %w", err)
	}
	return path, nil
}

// parseNameStatus fills ch's file lists from `diff --name-status -z`:
// a status, then a path, each ended by NUL.
func parseNameStatus(ch *agenttypes.Changes, out []byte) {
	fields := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		status, path := fields[i], fields[i+1]
		switch {
		case strings.HasPrefix(status, "A"):
			ch.Added = append(ch.Added, path)
		case strings.HasPrefix(status, "D"):
			ch.Deleted = append(ch.Deleted, path)
		default: // M, or T: a file that became a symlink, say
			ch.Modified = append(ch.Modified, path)
		}
	}
	slices.Sort(ch.Added)
	slices.Sort(ch.Modified)
	slices.Sort(ch.Deleted)
}

// parseNumstat sums `diff --numstat -z`: "ADDED\tDELETED\tPATH" ended by
// NUL, "-" for a binary file's counts.
func parseNumstat(out []byte) (insertions, deletions int) {
	for line := range bytes.SplitSeq(out, []byte{0}) {
		parts := strings.SplitN(string(line), "\t", 3)
		if len(parts) < 3 {
			continue
		}
		if n, err := strconv.Atoi(parts[0]); err == nil {
			insertions += n
		}
		if n, err := strconv.Atoi(parts[1]); err == nil {
			deletions += n
		}
	}
	return insertions, deletions
}
