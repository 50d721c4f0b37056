// Command funclen lists the functions longer than a limit in the Go files
// under the directories it is given, as "file:line: func Name is N lines
// (limit L)", and exits 1 when there is any. A function's length runs from
// the line of its func keyword to the line of its closing brace.
//
// Test files (_test.go) and generated files (a "Code generated ... DO NOT
// EDIT." line before the package clause) are not checked, nor directories
// the go command leaves out of ./... (testdata, and names starting with "."
// or "_").
//
//	go run ./.ci/funclen [-limit 80] DIR...
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run checks the directories args names and returns the exit code: 0 when
// every function is within the limit, 1 when some are not, 2 when the
// check could not be made.
func run(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("funclen", flag.ContinueOnError)
	flags.SetOutput(stderr)
	limit := flags.Int("limit", 80, "the most lines a function may have")
	flags.Usage = func() {
		fmt.Fprintln(stderr, "usage: funclen [-limit N] DIR...")
		flags.PrintDefaults()
	}
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if flags.NArg() == 0 || *limit < 1 {
		flags.Usage()
		return 2
	}
	long, err := check(flags.Args(), *limit)
	if err != nil {
		fmt.Fprintln(stderr, "funclen:", err)
		return 2
	}
	for _, f := range long {
		fmt.Fprintf(stdout, "%s:%d: func %s is %d lines (limit %d)\n", f.file, f.line, f.name, f.lines, *limit)
	}
	if len(long) > 0 {
		return 1
	}
	return 0
}

// longFunc is a function over the limit.
type longFunc struct {
	file        string
	line, lines int
	name        string
}

// check walks each root and returns the functions longer than limit, in
// file order and then line order.
func check(roots []string, limit int) ([]longFunc, error) {
	var long []longFunc
	fset := token.NewFileSet()
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != root && skippedDir(d.Name()) {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			found, err := checkFile(fset, path, limit)
			long = append(long, found...)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return long, nil
}

// skippedDir reports whether the go command leaves a directory of this
// name out of ./..., and so out of the build.
func skippedDir(name string) bool {
	return name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}

func checkFile(fset *token.FileSet, path string, limit int) ([]longFunc, error) {
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	if ast.IsGenerated(f) {
		return nil, nil
	}
	var long []longFunc
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		start := fset.Position(fn.Pos()).Line
		if n := fset.Position(fn.End()).Line - start + 1; n > limit {
			long = append(long, longFunc{file: path, line: start, name: funcName(fn), lines: n})
		}
	}
	return long, nil
}

// funcName is a function's name as Go spells a method expression:
// Name, T.Name or (*T).Name.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	star := false
	if s, ok := typ.(*ast.StarExpr); ok {
		typ, star = s.X, true
	}
	// A generic receiver, T[K] or T[K, V]: the type's name is enough.
	switch t := typ.(type) {
	case *ast.IndexExpr:
		typ = t.X
	case *ast.IndexListExpr:
		typ = t.X
	}
	id, ok := typ.(*ast.Ident)
	if !ok {
		return fn.Name.Name
	}
	if star {
		return "(*" + id.Name + ")." + fn.Name.Name
	}
	return id.Name + "." + fn.Name.Name
}
