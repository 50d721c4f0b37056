package script

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/scanner"
	"go/token"
	"slices"
	"strconv"
	"strings"
)

// Kind says what a script is for.
type Kind string

const (
	// KindHooks is a definition's script: Prompt, Result, BeforeTool.
	KindHooks Kind = "hooks"
	// KindTool is a script tool's body: Run.
	KindTool Kind = "tool"
)

// srcError is a problem at a line and column of a script's source.
type srcError struct {
	Line int    `json:"line"`
	Col  int    `json:"col"`
	Msg  string `json:"msg"`
}

func (e srcError) Error() string { return fmt.Sprintf("%d:%d: %s", e.Line, e.Col, e.Msg) }

// hook is one function of the fixed contract.
type hook struct {
	name string
	sig  string // as a script writes it, troupe's types named troupe.X
	kind Kind
}

var hooks = []hook{
	{"Prompt", "func(task troupe.Task) (string, error)", KindHooks},
	{"Result", "func(output string) (any, error)", KindHooks},
	{"BeforeTool", "func(call troupe.ToolCall) error", KindHooks},
	{"Run", "func(args map[string]any) (string, error)", KindTool},
}

// shapes are the accepted signatures with parameter names left out.
var shapes = map[string][]string{
	"Prompt":     {"func(troupe.Task) (string, error)"},
	"Result":     {"func(string) (any, error)", "func(string) (interface{}, error)"},
	"BeforeTool": {"func(troupe.ToolCall) error"},
	"Run":        {"func(map[string]any) (string, error)", "func(map[string]interface{}) (string, error)"},
}

// checked is what the static check learned of a script.
type checked struct {
	has map[string]int // hook name → its line
	// blocks is set when the script has a channel type, a channel
	// operation or a select: a call of it may wait forever where stopping
	// the interpreter does not reach (yaegi stops running code, not a
	// goroutine parked in a channel operation).
	blocks bool
}

// check parses a script and checks what can be checked without running
// it: the package name, the imports against the allow-list, the hooks'
// signatures, and the newer Go features the interpreter does not know.
func check(src string, kind Kind) (checked, []srcError) {
	c := checked{has: map[string]int{}}
	fset := token.NewFileSet()
	f, failed := parseScript(fset, src)
	if failed != nil {
		return c, failed
	}
	errs := &srcErrors{fset: fset}
	if f.Name.Name != "hooks" {
		errs.at(f.Name.Pos(), "a script is package hooks, not package %s", f.Name.Name)
	}
	troupeName := errs.imports(f)
	errs.list = append(errs.list, unsupported(fset, f)...)
	c.blocks = mayBlock(f)
	errs.signatures(f, kind, troupeName, c.has)
	errs.hooksDefined(f.Name.Pos(), kind, c.has)
	return c, errs.list
}

// parseScript parses src; when it is too long or is not Go, it returns
// why instead, at most ten syntax errors.
func parseScript(fset *token.FileSet, src string) (*ast.File, []srcError) {
	if len(src) > maxSource {
		return nil, []srcError{{1, 1, fmt.Sprintf("the script is %d bytes; scripts are limited to %d", len(src), maxSource)}}
	}
	f, err := parser.ParseFile(fset, "script.go", src, parser.AllErrors|parser.SkipObjectResolution)
	if err != nil {
		var list scanner.ErrorList
		if errors.As(err, &list) {
			var out []srcError
			for _, e := range list {
				out = append(out, srcError{e.Pos.Line, e.Pos.Column, "Go syntax: " + e.Msg})
				if len(out) == 10 {
					break
				}
			}
			return nil, out
		}
		return nil, []srcError{{1, 1, err.Error()}}
	}
	return f, nil
}

// srcErrors gathers the problems the check finds in a parsed script.
type srcErrors struct {
	fset *token.FileSet
	list []srcError
}

// at adds a problem at p.
func (e *srcErrors) at(p token.Pos, format string, args ...any) {
	pp := e.fset.Position(p)
	e.list = append(e.list, srcError{pp.Line, pp.Column, fmt.Sprintf(format, args...)})
}

// imports checks f's imports against the allow-list, and returns the name
// the host package goes by in f ("" when f does not import it).
func (e *srcErrors) imports(f *ast.File) (troupeName string) {
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		switch {
		case path == HostPackage:
			troupeName = "troupe"
			if imp.Name != nil {
				troupeName = imp.Name.Name
			}
		case slices.Contains(Allowed, path):
		default:
			e.at(imp.Path.Pos(), "import %q is not allowed: a script may import only %s and %s (the host API)", path, strings.Join(Allowed, ", "), HostPackage)
		}
	}
	return troupeName
}

// signatures checks the signature of each hook of kind that f defines, and
// records its line in has.
func (e *srcErrors) signatures(f *ast.File, kind Kind, troupeName string, has map[string]int) {
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv != nil {
			continue
		}
		i := slices.IndexFunc(hooks, func(h hook) bool { return h.name == fd.Name.Name })
		if i < 0 {
			continue
		}
		h := hooks[i]
		line := e.fset.Position(fd.Pos()).Line
		if h.kind != kind {
			continue // a helper that happens to share a name
		}
		has[h.name] = line
		if fd.Type.TypeParams != nil {
			e.at(fd.Name.Pos(), "%s must be %s, without type parameters", h.name, h.sig)
			continue
		}
		got := shape(e.fset, fd.Type, troupeName)
		if !slices.Contains(shapes[h.name], got) {
			e.at(fd.Name.Pos(), "%s is %s; it must be %s", h.name, got, h.sig)
		}
	}
}

// hooksDefined checks that a script of kind defines what such a script is
// for: a hook script at least one hook, a script tool its Run. The problem
// is put at pkgPos, the package clause.
func (e *srcErrors) hooksDefined(pkgPos token.Pos, kind Kind, has map[string]int) {
	switch kind {
	case KindHooks:
		if len(has) == 0 {
			e.at(pkgPos, "this script defines no hook: define one or more of func Prompt(task troupe.Task) (string, error), func Result(output string) (any, error) and func BeforeTool(call troupe.ToolCall) error")
		}
	case KindTool:
		if _, ok := has["Run"]; !ok {
			e.at(pkgPos, "a script tool defines func Run(args map[string]any) (string, error)")
		}
	}
}

// shape prints a func type without parameter names, the host package
// spelled troupe whatever the import calls it.
func shape(fset *token.FileSet, ft *ast.FuncType, troupeName string) string {
	list := func(fl *ast.FieldList) []string {
		var out []string
		if fl == nil {
			return nil
		}
		for _, f := range fl.List {
			var b bytes.Buffer
			_ = printer.Fprint(&b, fset, f.Type)
			s := b.String()
			if troupeName != "" && troupeName != "troupe" {
				s = strings.ReplaceAll(s, troupeName+".", "troupe.")
			}
			for range max(len(f.Names), 1) {
				out = append(out, s)
			}
		}
		return out
	}
	params, results := list(ft.Params), list(ft.Results)
	s := "func(" + strings.Join(params, ", ") + ")"
	switch len(results) {
	case 0:
	case 1:
		s += " " + results[0]
	default:
		s += " (" + strings.Join(results, ", ") + ")"
	}
	return s
}

// unsupported finds the Go features newer than the interpreter: range over
// an integer or a function (Go 1.22, 1.23) and the min, max and clear
// builtins (Go 1.21). A range whose operand's type is not plain from the
// source is left to the interpreter.
func unsupported(fset *token.FileSet, f *ast.File) []srcError {
	declared := map[string]bool{}
	funcs := map[string]bool{}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				declared[d.Name.Name] = true
				funcs[d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.ValueSpec:
					for _, n := range s.Names {
						declared[n.Name] = true
					}
				case *ast.TypeSpec:
					declared[s.Name.Name] = true
				}
			}
		}
	}
	var errs []srcError
	at := func(p token.Pos, msg string) {
		pp := fset.Position(p)
		errs = append(errs, srcError{pp.Line, pp.Column, msg})
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.RangeStmt:
			switch x := ast.Unparen(n.X).(type) {
			case *ast.BasicLit:
				if x.Kind == token.INT {
					at(n.Pos(), "range over an integer (Go 1.22) is not supported by the script interpreter; write for i := 0; i < n; i++")
				}
			case *ast.CallExpr:
				if id, ok := x.Fun.(*ast.Ident); ok && id.Name == "len" && !declared["len"] {
					at(n.Pos(), "range over an integer (Go 1.22) is not supported by the script interpreter; write for i := 0; i < n; i++")
				}
			case *ast.FuncLit:
				at(n.Pos(), "range over a function (Go 1.23) is not supported by the script interpreter; call the function with a callback instead")
			case *ast.Ident:
				if funcs[x.Name] {
					at(n.Pos(), "range over a function (Go 1.23) is not supported by the script interpreter; call the function with a callback instead")
				}
			}
		case *ast.CallExpr:
			if id, ok := n.Fun.(*ast.Ident); ok && !declared[id.Name] {
				switch id.Name {
				case "min", "max", "clear":
					at(id.Pos(), fmt.Sprintf("the %s builtin (Go 1.21) is not supported by the script interpreter; write it out", id.Name))
				}
			}
		}
		return true
	})
	return errs
}

// mayBlock reports whether f could park a goroutine in a channel
// operation. Without a channel type a script has no channel to wait on:
// nothing it may import or call hands one out (time.After and its kind
// are denied), so select is the only other way to wait.
func mayBlock(f *ast.File) bool {
	found := false
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ChanType, *ast.SelectStmt, *ast.SendStmt:
			found = true
		case *ast.UnaryExpr:
			found = found || n.Op == token.ARROW
		}
		return !found
	})
	return found
}
