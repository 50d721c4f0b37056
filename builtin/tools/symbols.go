package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/fsroot"
	"github.com/troupe-dev/troupe/builtin/outline"
)

const (
	symbolsDefaultResults = 50
	symbolsMaxResults     = 500
	// symbolsMaxFileSize: larger source files (bundles, tables) are
	// not outlined.
	symbolsMaxFileSize = 2 << 20
	// symbolsMaxFiles and symbolsMaxBytes bound one call: the files
	// are taken in path order until either is reached.
	symbolsMaxFiles = 5000
	symbolsMaxBytes = 64 << 20
	// symbolsMaxQuery bounds the query's length.
	symbolsMaxQuery = 1 << 10
)

const symbolsDescription = `List the declarations of the code — functions and methods, types, constants, variables and fields — as an outline, or those that match a query, one line each: path:start-end kind name signature — the first sentence of its doc comment.

Use it to find where something is defined, or done, when you know what it does but not what it is called: a declaration matches when its name (split at camelCase and snake_case), its doc comment or its body holds one of the query's words, a word matching the start of a name part or of a word ("limit" matches LimitReader, "timeout" matches readHeaderTimeout), less its plural or verb ending ("validated" matches Validate and validation). The best matches come first: a word counts most in a name, then in a doc comment, then in the body, and a word few declarations hold counts more than a common one. The first line says how many declarations in how many files were scanned, how many match, and how many match each word.

Reads Go (parsed, methods shown with their receiver as (*Server).Shutdown), Python, JavaScript/TypeScript, Rust, Java and C. Searches the whole tree by default, or one directory or file given as path. Like grep, it skips files ignored by .gitignore, the .git directory, binary files and files over 2 MiB. Test files and directories (foo_test.go, test_foo.py, foo.test.ts, tests/, testdata/), vendored code (vendor/, node_modules/, third_party/) and generated files (a "DO NOT EDIT" or "@generated" header) are left out unless path asks for them: name the file itself, or a directory that is or is inside a test or vendored directory. At most 5000 files a call; a last line says what was left out.`

const symbolsParams = `{
  "type": "object",
  "properties": {
    "query": {"type": "string", "description": "Words to look for in declarations' names and doc comments, e.g. \"limit request body\". Default: none, every declaration."},
    "path": {"type": "string", "description": "Directory or file to outline, relative to the root. Default: the whole root."},
    "kind": {"type": "string", "enum": ["func", "type", "value"], "description": "Only declarations of this kind: func (functions, methods), type (types, classes, interfaces, traits), value (constants, variables, fields)."},
    "max_results": {"type": "integer", "minimum": 1, "maximum": 500, "description": "Most declarations to list. Default 50."}
  },
  "additionalProperties": false
}`

// Symbols returns the symbols tool. See the package documentation for
// its output.
func Symbols() agenttypes.Tool {
	return newTool("symbols", symbolsDescription, symbolsParams, runSymbols)
}

type symbolsArgs struct {
	Query      string `json:"query"`
	Path       string `json:"path"`
	Kind       string `json:"kind"`
	MaxResults int    `json:"max_results"`
}

// symbolsCall is one call's request, checked.
type symbolsCall struct {
	words []queryWord
	kind  outline.Kind
	max   int
}

func (a symbolsArgs) check() (symbolsCall, error) {
	var c symbolsCall
	if a.Kind != "" {
		k, ok := outline.ParseKind(a.Kind)
		if !ok {
			return c, fmt.Errorf("kind %q is not one of func, type, value; leave it out for every kind", a.Kind)
		}
		c.kind = k
	}
	switch {
	case a.MaxResults < 0:
		return c, fmt.Errorf("max_results must be between 1 and %d, got %d", symbolsMaxResults, a.MaxResults)
	case a.MaxResults == 0:
		c.max = symbolsDefaultResults
	default:
		c.max = min(a.MaxResults, symbolsMaxResults)
	}
	if len(a.Query) > symbolsMaxQuery {
		return c, fmt.Errorf("the query is %d bytes; give at most %d, a few words", len(a.Query), symbolsMaxQuery)
	}
	c.words = parseQuery(a.Query)
	if strings.TrimSpace(a.Query) != "" && len(c.words) == 0 {
		return c, fmt.Errorf("the query %q has no word of two letters or more to look for", a.Query)
	}
	return c, nil
}

func runSymbols(ctx context.Context, root *fsroot.Root, raw json.RawMessage) (string, error) {
	var a symbolsArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	c, err := a.check()
	if err != nil {
		return "", err
	}
	start, err := root.Resolve(a.Path)
	if err != nil {
		return "", err
	}
	fi, err := root.Stat(start)
	if err != nil {
		return "", err
	}
	sc := &symbolScan{words: c.words}
	switch {
	case fi.Mode().IsRegular():
		if outline.LangOf(start) == 0 {
			return "", fmt.Errorf("%s is not source code symbols reads (Go, Python, JavaScript/TypeScript, Rust, Java, C); use read or grep", start)
		}
		if fi.Size() > symbolsMaxFileSize {
			return "", fmt.Errorf("%s is larger than %d MiB; symbols outlines smaller files, use grep or read with offset and limit", start, symbolsMaxFileSize>>20)
		}
		sc.files, sc.explicit, sc.tests = []sourceFile{{rel: start, size: fi.Size()}}, true, true
	case fi.IsDir():
		if err := sc.listSources(ctx, root, start); err != nil {
			return "", err
		}
	default:
		return "", fmt.Errorf("%s is not a regular file or a directory", start)
	}
	sc.capFiles()
	sc.outlineAll(ctx, root)
	if err := ctx.Err(); err != nil {
		return "", err
	}
	return sc.report(c), nil
}

// sourceFile is a file to outline.
type sourceFile struct {
	rel     string
	size    int64
	scanned bool // read and outlined: not binary, nor generated unless asked for
	decls   []outline.Decl
	bodies  []bodyMatch // by decls' index, when the call has a query
}

// symbolScan is what one call scans and what it leaves out.
type symbolScan struct {
	words    []queryWord // the query's, looked for in bodies while each file is read
	files    []sourceFile
	explicit bool // a file named by path: outlined whatever it is
	tests    bool // test code is asked for
	walk     walkResult
	// Left out, for the notes.
	testFiles, testDirs, vendorDirs, generated, tooLarge, overCap, failed int
	mu                                                                    sync.Mutex
}

// listSources walks the directory start for source files, leaving out
// tests and vendored code unless start is inside them, and files too
// large to outline.
func (sc *symbolScan) listSources(ctx context.Context, root *fsroot.Root, start string) error {
	vendored := false
	for _, part := range strings.Split(start, "/") {
		sc.tests = sc.tests || outline.TestDir(part)
		vendored = vendored || outline.VendorDir(part)
	}
	opt := walkOptions{workers: runtime.GOMAXPROCS(0), descend: func(rel string) bool {
		name := path.Base(rel)
		switch {
		case !sc.tests && outline.TestDir(name):
			sc.count(&sc.testDirs)
			return false
		case !vendored && outline.VendorDir(name):
			sc.count(&sc.vendorDirs)
			return false
		}
		return true
	}}
	res, err := walk(ctx, root, start, opt, func(_ int, e walkEntry) {
		if e.typ&fs.ModeSymlink != 0 || outline.LangOf(e.name) == 0 {
			return
		}
		if !sc.tests && outline.TestFile(e.name) {
			sc.count(&sc.testFiles)
			return
		}
		fi, err := e.dir.Lstat(e.name)
		if err != nil || !fi.Mode().IsRegular() {
			return
		}
		if fi.Size() > symbolsMaxFileSize {
			sc.count(&sc.tooLarge)
			return
		}
		sc.mu.Lock()
		sc.files = append(sc.files, sourceFile{rel: e.rel, size: fi.Size()})
		sc.mu.Unlock()
	})
	sc.walk = res
	return err
}

func (sc *symbolScan) count(n *int) {
	sc.mu.Lock()
	*n++
	sc.mu.Unlock()
}

// capFiles sorts the files by path and keeps the first ones within
// symbolsMaxFiles and symbolsMaxBytes, so that a call over a huge tree
// always scans the same files.
func (sc *symbolScan) capFiles() {
	slices.SortFunc(sc.files, func(a, b sourceFile) int { return strings.Compare(a.rel, b.rel) })
	var total int64
	for i, f := range sc.files {
		total += f.size
		if i == symbolsMaxFiles || total > symbolsMaxBytes {
			sc.overCap = len(sc.files) - i
			sc.files = sc.files[:i]
			return
		}
	}
}

// outlineAll reads and outlines the files, from as many goroutines as
// GOMAXPROCS, each file's declarations kept at its place.
func (sc *symbolScan) outlineAll(ctx context.Context, root *fsroot.Root) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(sc.files)) {
		wg.Go(func() {
			var buf []byte
			for i := range next {
				buf = sc.outlineFile(root, &sc.files[i], buf)
			}
		})
	}
	for i := range sc.files {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
}

// outlineFile reads one file into buf (reused when large enough) and
// outlines it, unless it is binary, or generated and not asked for. A
// panic of the outline is this file's failure, logged, never the
// process's end.
func (sc *symbolScan) outlineFile(root *fsroot.Root, f *sourceFile, buf []byte) []byte {
	defer func() {
		if r := recover(); r != nil {
			logPanic("symbols: outlining a file panicked", f.rel, r)
			sc.count(&sc.failed)
		}
	}()
	file, fi, err := root.OpenFile(f.rel)
	if err != nil {
		return buf
	}
	defer file.Close()
	data, err := readSearchableFile(f.rel, file, fi, symbolsMaxFileSize, buf)
	if err != nil {
		return data[:0]
	}
	if !sc.explicit && outline.Generated(f.rel, data) {
		sc.count(&sc.generated)
		return data[:0]
	}
	f.scanned = true
	for _, d := range outline.Parse(outline.LangOf(f.rel), data) {
		if !d.Test || sc.tests {
			f.decls = append(f.decls, d)
		}
	}
	f.bodies = matchBodies(outline.LangOf(f.rel), data, f.decls, sc.words)
	return data[:0]
}

// logPanic logs a recovered panic with its stack.
func logPanic(msg, rel string, r any) {
	slog.Error(msg, "path", rel, "panic", r, "stack", string(debug.Stack()))
}
