package tools

import (
	"bytes"
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/fsroot"
)

const (
	grepDefaultResults = 100
	grepMaxResults     = 2000
	// grepMaxPattern: compiling a regular expression cannot be
	// cancelled, and one of a megabyte takes seconds.
	grepMaxPattern = 4 << 10
	// grepMaxFileSize: larger files (logs, data dumps) are skipped.
	grepMaxFileSize = 8 << 20
	// grepBinaryProbe: a NUL byte this early means a binary file.
	grepBinaryProbe = 8 << 10
	// grepMaxLineText: longer matching lines are cut.
	grepMaxLineText = 300
	// grepNoMatch is grep's output when nothing matched.
	grepNoMatch = "no matches"
)

const grepDescription = `Search file contents with a regular expression (RE2 syntax, as in Go) and list matching lines as path:line:text, sorted by path then line number, paths relative to the root.

Use it to find where something is defined or used. Searches the whole tree by default, or one directory or file given as path. Files ignored by .gitignore, the .git directory, binary files, files over 8 MiB and directories more than 256 levels below path are skipped (a last line says when directories were). Lines longer than 300 characters are cut.

Tips: escape regex metacharacters for literal text (e.g. "Foo\\(" or "a\\.b"); use glob to limit file types (e.g. "*.go" or "internal/**/*.ts"); use ignore_case for case-insensitive search. At most max_results lines are shown (default 100, up to 2000); a final line says how many more matched.`

const grepParams = `{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "RE2 regular expression to search for, e.g. \"func \\w+Handler\" or \"TODO|FIXME\"."},
    "path": {"type": "string", "description": "Directory or file to search, relative to the root. Default: the whole root."},
    "glob": {"type": "string", "description": "Only search files matching this glob: without a slash it matches file names (\"*.go\", \"*.{ts,tsx}\"), with one the path from the root (\"cmd/**/*.go\")."},
    "ignore_case": {"type": "boolean", "description": "Match without regard to case. Default false."},
    "max_results": {"type": "integer", "minimum": 1, "maximum": 2000, "description": "Most matching lines to show. Default 100."}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`

// Grep returns the grep tool. See the package documentation for its output.
func Grep() agenttypes.Tool {
	return newTool("grep", grepDescription, grepParams, runGrep)
}

type grepArgs struct {
	Pattern    string `json:"pattern"`
	Path       string `json:"path"`
	Glob       string `json:"glob"`
	IgnoreCase bool   `json:"ignore_case"`
	MaxResults int    `json:"max_results"`
}

func runGrep(ctx context.Context, root *fsroot.Root, raw json.RawMessage) (string, error) {
	var a grepArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	if a.Pattern == "" {
		return "", errors.New(`missing "pattern": give a regular expression to search for`)
	}
	if len(a.Pattern) > grepMaxPattern {
		return "", fmt.Errorf("the pattern is %d bytes; give at most %d, searching for a shorter part of the text", len(a.Pattern), grepMaxPattern)
	}
	switch {
	case a.MaxResults < 0:
		return "", fmt.Errorf("max_results must be between 1 and %d, got %d", grepMaxResults, a.MaxResults)
	case a.MaxResults == 0:
		a.MaxResults = grepDefaultResults
	case a.MaxResults > grepMaxResults:
		a.MaxResults = grepMaxResults
	}
	m, err := newMatcher(a.Pattern, a.IgnoreCase)
	if err != nil {
		return "", err
	}
	glob := strings.TrimPrefix(strings.TrimPrefix(a.Glob, "./"), "/")
	if glob != "" && !doublestar.ValidatePattern(glob) {
		return "", fmt.Errorf("bad glob %q: see doublestar syntax (*, **, ?, [abc], {a,b})", a.Glob)
	}
	start, err := root.Resolve(a.Path)
	if err != nil {
		return "", err
	}
	fi, err := root.Stat(start)
	if err != nil {
		return "", err
	}

	g := &grepper{m: m, col: newCollector(a.MaxResults), glob: glob}
	var res walkResult
	workers := runtime.GOMAXPROCS(0)
	g.scratch = make([]grepScratch, workers)
	for i := range g.scratch {
		g.scratch[i].st.stop = func() bool { return ctx.Err() != nil }
	}
	switch {
	case fi.Mode().IsRegular():
		// An explicit file is searched even if ignored or not matching
		// glob: it was asked for.
		dir, err := root.OpenDir(path.Dir(start))
		if err != nil {
			return "", err
		}
		err = g.searchFile(0, walkEntry{dir: dir, name: path.Base(start), rel: start}, true)
		dir.Close()
		if err != nil {
			return "", err
		}
	case fi.IsDir():
		res, err = walk(ctx, root, start, walkOptions{workers: workers}, func(w int, e walkEntry) {
			_ = g.searchFile(w, e, false) // unreadable files are skipped
		})
	default:
		return "", fmt.Errorf("%s is not a regular file or a directory", start)
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return "", err
	}
	return g.col.format() + depthNote(res, "searched"), nil
}

type grepper struct {
	m       *matcher
	col     *collector
	glob    string
	scratch []grepScratch // per worker
}

type grepScratch struct {
	buf []byte
	st  scanState
	_   [64]byte // keep workers' hot fields off each other's cache lines
}

// searchFile searches one file. explicit is true for a file named by the
// path argument: it is searched whatever glob says, and a reason it cannot
// be searched is returned instead of skipping it quietly.
func (g *grepper) searchFile(w int, e walkEntry, explicit bool) error {
	if !explicit {
		if e.typ&fs.ModeSymlink != 0 {
			return nil // like rg: a walk does not follow symlinks, so no duplicates
		}
		if g.glob != "" {
			target := e.rel
			if !strings.Contains(g.glob, "/") {
				target = e.name
			}
			if !doublestar.MatchUnvalidated(g.glob, target) {
				return nil
			}
		}
	}
	sc := &g.scratch[w]
	data, err := readSearchable(e, sc.buf)
	if cap(data) > cap(sc.buf) {
		sc.buf = data[:0]
	}
	if err != nil {
		slog.Debug("grep: skipping", "path", e.rel, "err", err)
		return err
	}
	full := g.col.wants(e.rel)
	var fm *fileMatches
	count := 0
	completed := g.m.scan(data, &sc.st, func(n int, line []byte) bool {
		count++
		if full && count <= g.col.k {
			if fm == nil {
				fm = &fileMatches{path: e.rel}
			}
			fm.lines = append(fm.lines, lineMatch{n: n, text: clipLine(line)})
		}
		return true
	})
	if completed && count > 0 {
		g.col.add(fm, count)
	}
	return nil
}

// readSearchable reads a regular file into buf (reused when large enough)
// unless it is too large or binary.
func readSearchable(e walkEntry, buf []byte) ([]byte, error) {
	f, fi, err := e.dir.OpenFile(e.name)
	if err != nil {
		return buf, err
	}
	defer f.Close()
	return readSearchableFile(e.rel, f, fi, grepMaxFileSize, buf)
}

// readSearchableFile reads the open file f, whose size fi gives, into buf
// (reused when large enough), unless it is larger than maxSize or
// binary (a NUL byte in its first 8 KiB).
func readSearchableFile(rel string, f io.Reader, fi fs.FileInfo, maxSize int64, buf []byte) ([]byte, error) {
	size := fi.Size()
	if size > maxSize {
		return buf, fmt.Errorf("%s is larger than %d MiB; grep skips such files, use read with offset and limit", rel, maxSize>>20)
	}
	if int64(cap(buf)) < size {
		buf = make([]byte, 0, size+size/4)
	}
	buf = buf[:size]
	n, err := io.ReadFull(f, buf)
	buf = buf[:n] // a file that shrank since stat
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return buf, err
	}
	if bytes.IndexByte(buf[:min(n, grepBinaryProbe)], 0) >= 0 {
		return buf, fmt.Errorf("%s is a binary file; grep searches text files only", rel)
	}
	return buf, nil
}

// clipLine copies a matching line for output, cut to grepMaxLineText
// bytes at a rune boundary.
func clipLine(line []byte) string {
	if len(line) <= grepMaxLineText {
		return string(line)
	}
	cut := grepMaxLineText
	for cut > 0 && !utf8.RuneStart(line[cut]) {
		cut--
	}
	return string(line[:cut]) + " [...]"
}

type lineMatch struct {
	n    int
	text string
}

type fileMatches struct {
	path  string
	lines []lineMatch
}

// collector keeps the first k matching lines in (path, line) order while
// workers add files in any order, and counts all of them. Files are held
// in a max-heap by path; a file whose lines all fall beyond the first k is
// dropped (only its count stays).
type collector struct {
	k     int
	total atomic.Int64
	mu    sync.Mutex
	kept  int
	files fileHeap
}

func newCollector(k int) *collector { return &collector{k: k} }

// wants reports whether lines of the file at path could be among the
// first k. If not, the caller only counts.
func (c *collector) wants(path string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.kept < c.k || path < c.files[0].path
}

func (c *collector) add(fm *fileMatches, count int) {
	c.total.Add(int64(count))
	if fm == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	heap.Push(&c.files, fm)
	c.kept += len(fm.lines)
	for len(c.files) > 0 && c.kept-len(c.files[0].lines) >= c.k {
		c.kept -= len(heap.Pop(&c.files).(*fileMatches).lines)
	}
}

func (c *collector) format() string {
	files := slices.Clone(c.files)
	slices.SortFunc(files, func(a, b *fileMatches) int { return strings.Compare(a.path, b.path) })
	var out []byte
	shown := 0
	for _, f := range files {
		for _, l := range f.lines {
			if shown == c.k {
				break
			}
			out = append(out, QuotePath(f.path)...)
			out = append(out, ':')
			out = strconv.AppendInt(out, int64(l.n), 10)
			out = append(out, ':')
			out = append(out, l.text...)
			out = append(out, '\n')
			shown++
		}
	}
	total := int(c.total.Load())
	switch {
	case total == 0:
		return grepNoMatch
	case total > shown:
		out = fmt.Appendf(out, "... %d more matches not shown; narrow the pattern or raise max_results\n", total-shown)
	}
	return strings.TrimSuffix(string(out), "\n")
}

type fileHeap []*fileMatches

func (h fileHeap) Len() int           { return len(h) }
func (h fileHeap) Less(i, j int) bool { return h[i].path > h[j].path }
func (h fileHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *fileHeap) Push(x any)        { *h = append(*h, x.(*fileMatches)) }
func (h *fileHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
