package tools

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/fsroot"
)

// globMaxResults caps how many paths glob lists.
const globMaxResults = 500

// globNoMatch is glob's whole output when nothing matched.
const globNoMatch = "no files match"

const globDescription = `Find files by name with a glob pattern and list their paths relative to the root, most recently modified first.

Patterns use doublestar syntax: * matches within one path segment, ** matches any number of directories, ? one character, [abc] a class, {a,b} alternatives. Examples: "**/*.go", "cmd/*/main.go", "**/*_test.{go,py}". The pattern is matched against paths below path (default: the root). Only files are listed, not directories. Files ignored by .gitignore, the .git directory and directories more than 256 levels below path are skipped (a last line says when directories were). At most 500 paths are shown.`

const globParams = `{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "Glob pattern, e.g. \"**/*.go\" or \"src/**/*.{ts,tsx}\"."},
    "path": {"type": "string", "description": "Directory to search in, relative to the root; the pattern is matched against paths below it. Default: the root."}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`

// Glob returns the glob tool. See the package documentation for its output.
func Glob() agenttypes.Tool {
	return newTool("glob", globDescription, globParams, runGlob)
}

type globArgs struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
}

func runGlob(ctx context.Context, root *fsroot.Root, raw json.RawMessage) (string, error) {
	var a globArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	if err := a.check(); err != nil {
		return "", err
	}
	full, base, err := a.resolve(root)
	if err != nil {
		return "", err
	}
	if fi, err := root.Stat(base); err != nil || !fi.IsDir() {
		if errors.Is(err, fsroot.ErrOutside) {
			return "", err
		}
		return globNoMatch, nil
	}
	hits, res, err := globWalk(ctx, root, full, base)
	if err != nil {
		return "", err
	}
	if len(hits) == 0 {
		return globNoMatch + depthNote(res, "listed"), nil
	}
	return listHits(hits) + depthNote(res, "listed"), nil
}

// check refuses a missing pattern and one that is not doublestar syntax.
func (a globArgs) check() error {
	if a.Pattern == "" {
		return errors.New(`missing "pattern": give a glob such as "**/*.go"`)
	}
	if !doublestar.ValidatePattern(a.Pattern) {
		return fmt.Errorf("bad pattern %q: use doublestar syntax (*, **, ?, [abc], {a,b})", a.Pattern)
	}
	return nil
}

// resolve turns the pattern and path into full, the pattern matched
// against paths from the root, and base, its fixed part, the directory the
// walk starts from (which may not exist). A path that is not a directory
// is an error; so is anything outside the root.
func (a globArgs) resolve(root *fsroot.Root) (full, base string, err error) {
	dir, err := root.Resolve(a.Path)
	if err != nil {
		return "", "", err
	}
	pattern := strings.TrimPrefix(a.Pattern, "./")
	if strings.HasPrefix(pattern, "/") {
		// An absolute pattern: its fixed part must be inside the root.
		base, rest := doublestar.SplitPattern(pattern)
		rel, err := root.Resolve(base)
		if err != nil {
			return "", "", err
		}
		dir, pattern = ".", joinPattern(escapeMeta(rel), rest)
	}
	// Match against paths from the root, and walk only from the fixed
	// part of the pattern.
	full = joinPattern(escapeMeta(dir), pattern)
	base, _ = doublestar.SplitPattern(full)
	base = unescapeMeta(base)
	if a.Path != "" {
		if fi, err := root.Stat(dir); err != nil {
			return "", "", err
		} else if !fi.IsDir() {
			return "", "", fmt.Errorf("%s is not a directory; give a directory as path", dir)
		}
	}
	return full, base, nil
}

// globHit is a file that matched, with its modification time to sort by.
type globHit struct {
	rel   string
	mtime time.Time
}

// globWalk walks the tree below base and returns the files that match
// full, in no order.
func globWalk(ctx context.Context, root *fsroot.Root, full, base string) ([]globHit, walkResult, error) {
	var (
		mu   sync.Mutex
		hits []globHit
	)
	opt := walkOptions{workers: runtime.GOMAXPROCS(0), descend: descendFilter(full, base)}
	res, err := walk(ctx, root, base, opt, func(_ int, e walkEntry) {
		if !doublestar.MatchUnvalidated(full, e.rel) {
			return
		}
		fi, err := e.dir.Lstat(e.name)
		if err == nil && e.typ&fs.ModeSymlink != 0 {
			// A symlink counts when it names a file inside the root.
			fi, err = root.Stat(e.rel)
			if err == nil && !fi.Mode().IsRegular() {
				return
			}
		}
		if err != nil {
			return
		}
		mu.Lock()
		hits = append(hits, globHit{e.rel, fi.ModTime()})
		mu.Unlock()
	})
	return hits, res, err
}

// listHits lists hits one a line, most recently modified first (then by
// path, so that the order is stable), at most globMaxResults of them.
func listHits(hits []globHit) string {
	slices.SortFunc(hits, func(a, b globHit) int {
		if c := b.mtime.Compare(a.mtime); c != 0 {
			return c
		}
		return cmp.Compare(a.rel, b.rel)
	})
	var sb strings.Builder
	for i, h := range hits {
		if i == globMaxResults {
			fmt.Fprintf(&sb, "... %d more files not shown; narrow the pattern or path\n", len(hits)-i)
			break
		}
		sb.WriteString(QuotePath(h.rel))
		sb.WriteByte('\n')
	}
	return strings.TrimSuffix(sb.String(), "\n")
}

// descendFilter returns a filter that skips directories deeper than a
// pattern without ** can match, or nil when any depth may match.
func descendFilter(pattern, base string) func(string) bool {
	if strings.Contains(pattern, "**") {
		return nil
	}
	depth := strings.Count(pattern, "/") // directories the pattern can go down
	return func(rel string) bool {
		return strings.Count(rel, "/")+1 <= depth
	}
}

func joinPattern(dir, pattern string) string {
	if dir == "." || dir == "" {
		return pattern
	}
	return path.Join(dir, pattern)
}

// escapeMeta escapes glob metacharacters in a literal path.
func escapeMeta(p string) string {
	var sb strings.Builder
	for _, r := range p {
		if strings.ContainsRune(`*?[]{}\`, r) {
			sb.WriteByte('\\')
		}
		sb.WriteRune(r)
	}
	return sb.String()
}

func unescapeMeta(p string) string {
	if !strings.Contains(p, `\`) {
		return p
	}
	var sb strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '\\' && i+1 < len(p) {
			i++
		}
		sb.WriteByte(p[i])
	}
	return sb.String()
}
