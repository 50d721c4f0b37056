package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/troupe-dev/troupe/builtin/gitsafe"
)

// ErrNestedRepository is wrapped by Close when the workspace holds git
// repositories of its own that were made there (by a test, or git init):
// git records such a repository as the commit its HEAD is at, never its
// files, so they are on no branch. The workspace is left in place.
var ErrNestedRepository = errors.New("nested git repositories in the workspace")

// maxListed bounds the paths listed in Changes.Ignored and in the
// error naming nested repositories.
const maxListed = 20

// gitlinkMode is the mode git records a repository inside another with.
const gitlinkMode = "160000"

// nestedRepos lists the repositories inside the workspace that head
// records as gitlinks and its base does not (new ones, or ones whose
// HEAD moved): their files are in them alone.
func (w *Workspace) nestedRepos(ctx context.Context, g *gitsafe.Git, head string) ([]string, error) {
	if head == w.rec.Base {
		return nil, nil
	}
	// Two trees: no work tree is read and no repository recursed into;
	// gitsafe hides submodules from diffs, which this one must see.
	out, err := g.Output(ctx, "diff-tree", "-r", "-z", "--no-renames", "--ignore-submodules=none", w.rec.Base, head, "--")
	if err != nil {
		return nil, fmt.Errorf("looking for nested repositories: %w", err)
	}
	var repos []string
	// Each change is ":SRCMODE DSTMODE SRCOID DSTOID STATUS" NUL PATH NUL.
	fields := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		modes := strings.Fields(strings.TrimPrefix(fields[i], ":"))
		if len(modes) >= 2 && modes[1] == gitlinkMode {
			repos = append(repos, fields[i+1])
		}
	}
	return repos, nil
}

// nestedError is Close's refusal to remove a workspace that holds
// nested repositories.
func (w *Workspace) nestedError(repos []string) error {
	shown := repos
	if len(shown) > maxListed {
		shown = shown[:maxListed]
	}
	more := ""
	if n := len(repos) - len(shown); n > 0 {
		more = fmt.Sprintf(" and %d more", n)
	}
	return fmt.Errorf("%w (%s%s): git records a repository inside another only as the commit it is at, never its files, so they are on no branch, and the workspace is left in %s rather than removed with them; the rest of agent %s's work is on branch %s. Copy what you need out of those directories, then remove the workspace with `git worktree remove --force --force %s`",
		ErrNestedRepository, strings.Join(shown, ", "), more, w.rec.Tree, w.rec.Agent, w.rec.Branch, w.rec.Tree)
}

// ignored lists what is in the workspace and no commit holds because
// ignore rules cover it, as index (which matches the work recorded)
// sees it: a directory an ignore rule names is one entry ending in '/'.
// It returns the first maxListed and how many there are.
func ignored(ctx context.Context, g *gitsafe.Git, index string) ([]string, int, error) {
	l := &ignoredLister{max: maxListed}
	// git status, rather than ls-files, for its "matching" mode: a
	// directory that holds only ignored files is not itself listed.
	err := g.With("GIT_INDEX_FILE="+index).Run(ctx, nil, l, "status", "--porcelain", "-z",
		"--ignored=matching", "--untracked-files=normal", "--ignore-submodules=all", "--no-renames")
	if err != nil {
		return nil, 0, fmt.Errorf("listing the ignored files: %w", err)
	}
	return l.first, l.count, nil
}

// ignoredLister reads `git status --porcelain -z` entries ("XY PATH",
// NUL-ended), counts the ignored ones ("!! PATH") and keeps the first
// max, whatever the length of what it is given.
type ignoredLister struct {
	max     int
	count   int
	first   []string
	partial []byte // the start of an entry cut between writes
}

// maxEntry bounds an entry kept whole: longer ones are cut.
const maxEntry = 4 << 10

func (l *ignoredLister) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, 0)
		if i < 0 {
			l.partial = append(l.partial, p[:min(len(p), max(maxEntry-len(l.partial), 0))]...)
			break
		}
		entry := append(l.partial, p[:min(i, max(maxEntry-len(l.partial), 0))]...)
		if path, ok := bytes.CutPrefix(entry, []byte("!! ")); ok {
			if len(l.first) < l.max {
				l.first = append(l.first, string(path))
			}
			l.count++
		}
		l.partial = entry[:0]
		p = p[i+1:]
	}
	return n, nil
}
