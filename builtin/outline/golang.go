package outline

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"strings"
)

// goFile is a Go file being outlined: its source, its token file for
// positions, and the declarations found so far.
type goFile struct {
	src   []byte
	tf    *token.File
	decls []Decl
}

// parseGo outlines Go source with go/parser: functions and methods,
// types (with the fields of structs and the methods of interfaces), and
// each name of a const or var declaration, with the doc comments the
// parser attaches to them.
func parseGo(src []byte) []Decl {
	fset := token.NewFileSet()
	// Bodies hold no declaration the outline lists, and are most of
	// what the parser would spend its time on.
	f, _ := parser.ParseFile(fset, "", blankBodies(src), parser.ParseComments|parser.SkipObjectResolution)
	if f == nil || len(f.Decls) == 0 {
		return nil
	}
	g := &goFile{src: src, tf: fset.File(f.Decls[0].Pos())}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			g.funcDecl(d)
		case *ast.GenDecl:
			g.genDecl(d)
		}
	}
	return g.decls
}

// line is the line of p in the file, not as a //line directive would
// have it.
func (g *goFile) line(p token.Pos) int { return g.tf.PositionFor(p, false).Line }

// text is the source from a to b on one line, comments left out.
func (g *goFile) text(a, b token.Pos) string {
	from, to := g.tf.Offset(a), g.tf.Offset(b)
	if from < 0 || to > len(g.src) || from >= to {
		return ""
	}
	return oneLine(dropGoComments(g.src[from:to]))
}

// dropGoComments is src without its comments; most headers have none,
// and are returned as they are.
func dropGoComments(src []byte) string {
	s := string(src)
	if !strings.Contains(s, "//") && !strings.Contains(s, "/*") {
		return s
	}
	fset := token.NewFileSet()
	file := fset.AddFile("", -1, len(src))
	var sc scanner.Scanner
	sc.Init(file, src, nil, scanner.ScanComments)
	var b strings.Builder
	last := 0
	for {
		pos, tok, lit := sc.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.COMMENT {
			off := file.Offset(pos)
			b.WriteString(s[last:off])
			b.WriteByte(' ')
			last = off + len(lit)
		}
	}
	b.WriteString(s[last:])
	return b.String()
}

// docText is the text of the first comment group that has any, comment
// markers and directives (//go:embed, //line) removed. (It does not use
// CommentGroup.Text, which panics on some unterminated comments.)
func docText(cgs ...*ast.CommentGroup) string {
	for _, cg := range cgs {
		if cg == nil {
			continue
		}
		var lines []string
		for _, c := range cg.List {
			t := c.Text
			switch {
			case strings.HasPrefix(t, "//go:"), strings.HasPrefix(t, "//line "), strings.HasPrefix(t, "//export "):
				continue
			case strings.HasPrefix(t, "//"):
				t = t[2:]
			case strings.HasPrefix(t, "/*"):
				t = strings.TrimSuffix(t[2:], "*/")
			}
			for _, l := range strings.Split(t, "\n") {
				lines = append(lines, strings.TrimSpace(l))
			}
		}
		if t := strings.TrimSpace(strings.Join(lines, "\n")); t != "" {
			return t
		}
	}
	return ""
}

func (g *goFile) funcDecl(d *ast.FuncDecl) {
	end := d.End()
	if d.Body != nil {
		end = d.Body.Lbrace
	}
	decl := Decl{
		Kind: Func, Name: d.Name.Name, Qualified: d.Name.Name,
		Line: g.line(d.Pos()), End: g.line(d.End()),
		Signature: g.text(d.Pos(), end), Doc: docText(d.Doc),
	}
	if d.Recv != nil && len(d.Recv.List) > 0 {
		recv, ptr := receiver(d.Recv.List[0].Type)
		decl.Container = baseTypeName(recv)
		if ptr {
			decl.Qualified = "(*" + recv + ")." + d.Name.Name
		} else {
			decl.Qualified = recv + "." + d.Name.Name
		}
	}
	g.decls = append(g.decls, decl)
}

// receiver writes a receiver's type as a method expression names it:
// "Server" for *Server (ptr true), "List[T]", "Map[K,V]".
func receiver(e ast.Expr) (name string, ptr bool) {
	if p, ok := e.(*ast.ParenExpr); ok {
		return receiver(p.X)
	}
	if s, ok := e.(*ast.StarExpr); ok {
		name, _ = receiver(s.X)
		return name, true
	}
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name, false
	case *ast.IndexExpr:
		x, _ := receiver(e.X)
		i, _ := receiver(e.Index)
		return x + "[" + i + "]", false
	case *ast.IndexListExpr:
		x, _ := receiver(e.X)
		var params []string
		for _, ix := range e.Indices {
			p, _ := receiver(ix)
			params = append(params, p)
		}
		return x + "[" + strings.Join(params, ",") + "]", false
	}
	return "?", false
}

// baseTypeName is a type's name without its type parameters.
func baseTypeName(s string) string {
	if i := strings.IndexByte(s, '['); i >= 0 {
		return s[:i]
	}
	return s
}

func (g *goFile) genDecl(d *ast.GenDecl) {
	grouped := d.Lparen.IsValid()
	for _, s := range d.Specs {
		switch s := s.(type) {
		case *ast.TypeSpec:
			g.typeSpec(d, s, grouped)
		case *ast.ValueSpec:
			g.valueSpec(d, s, grouped)
		}
	}
}

func (g *goFile) typeSpec(d *ast.GenDecl, s *ast.TypeSpec, grouped bool) {
	start, prefix := d.Pos(), ""
	if grouped {
		start, prefix = s.Pos(), "type "
	}
	head := s.End()
	var members *ast.FieldList
	iface := false
	switch t := s.Type.(type) {
	case *ast.StructType:
		head, members = t.Fields.Opening, t.Fields
	case *ast.InterfaceType:
		head, members, iface = t.Methods.Opening, t.Methods, true
	}
	doc := s.Doc
	if !grouped {
		doc = d.Doc
	}
	g.decls = append(g.decls, Decl{
		Kind: Type, Name: s.Name.Name, Qualified: s.Name.Name,
		Line: g.line(start), End: g.line(s.End()),
		Signature: prefix + g.text(start, head), Doc: docText(doc, s.Comment),
	})
	if members != nil {
		g.members(s.Name.Name, members, iface)
	}
}

// members adds the named fields of a struct (values) and the methods of
// an interface (funcs); embedded types are not declarations.
func (g *goFile) members(typ string, fl *ast.FieldList, iface bool) {
	for _, f := range fl.List {
		kind := Value
		if _, ok := f.Type.(*ast.FuncType); ok && iface {
			kind = Func
		}
		for _, n := range f.Names {
			if n.Name == "_" {
				continue
			}
			sig := g.text(f.Pos(), f.End())
			if kind == Func {
				sig = n.Name + strings.TrimPrefix(g.text(f.Type.Pos(), f.Type.End()), "func")
			}
			g.decls = append(g.decls, Decl{
				Kind: kind, Name: n.Name, Container: typ, Qualified: typ + "." + n.Name,
				Line: g.line(f.Pos()), End: g.line(f.End()),
				Signature: sig, Doc: docText(f.Doc, f.Comment),
			})
		}
	}
}

func (g *goFile) valueSpec(d *ast.GenDecl, s *ast.ValueSpec, grouped bool) {
	start, prefix := d.Pos(), ""
	if grouped {
		start, prefix = s.Pos(), d.Tok.String()+" "
	}
	end := s.End()
	// A long value (a table, a map literal) is cut: its first line
	// says what it is.
	if endLine := g.line(start) + 2; g.line(end) > endLine && endLine <= g.tf.LineCount() {
		end = g.tf.LineStart(endLine)
	}
	sig := prefix + g.text(start, end)
	doc := docText(s.Doc, s.Comment)
	if doc == "" {
		doc = docText(d.Doc)
	}
	for _, n := range s.Names {
		if n.Name == "_" {
			continue
		}
		g.decls = append(g.decls, Decl{
			Kind: Value, Name: n.Name, Qualified: n.Name,
			Line: g.line(start), End: g.line(s.End()),
			Signature: sig, Doc: doc,
		})
	}
}

// blankGoBodies is src with the insides of its top-level function bodies
// (and of function literals at the top level) blanked: every byte a
// space but for line endings, so that positions and lines stay. It
// lexes just enough Go to find them: comments, strings, raw strings and
// rune literals, brackets, and the func keyword at the top level, whose
// first '{' outside brackets opens its body, unless a struct or
// interface type of its results opens it.
func blankGoBodies(src []byte) []byte {
	out := src
	depth, paren, body := 0, 0, -1
	header, lastWord := false, []byte(nil)
	for i := 0; i < len(src); i++ {
		switch c := src[i]; {
		case c == '/' && i+1 < len(src) && (src[i+1] == '/' || src[i+1] == '*'):
			i = goCommentEnd(src, i)
		case c == '"' || c == '`' || c == '\'':
			i = goQuoteEnd(src, i)
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80:
			j := i + 1
			for j < len(src) && (src[j] == '_' || src[j] >= 'a' && src[j] <= 'z' || src[j] >= 'A' && src[j] <= 'Z' || src[j] >= '0' && src[j] <= '9' || src[j] >= 0x80) {
				j++
			}
			if depth == 0 && paren == 0 {
				lastWord = src[i:j]
				header = header || string(lastWord) == "func"
			}
			i = j - 1
		case c == '(' || c == '[':
			paren++
		case c == ')' || c == ']':
			paren--
		case c == '\n' && header && depth == 0 && paren == 0:
			header = false // a declaration without a body
		case c == '{':
			if header && depth == 0 && paren == 0 && string(lastWord) != "struct" && string(lastWord) != "interface" {
				header, body = false, i
			}
			depth++
		case c == '}':
			depth--
			if depth == 0 && body >= 0 {
				if &out[0] == &src[0] {
					out = append([]byte(nil), src...)
				}
				for k := body + 1; k < i; k++ {
					if out[k] != '\n' {
						out[k] = ' '
					}
				}
				body = -1
			}
			if depth == 0 {
				lastWord = nil
			}
		}
	}
	return out
}

// goCommentEnd is the index of the last byte of the comment at src[i].
func goCommentEnd(src []byte, i int) int {
	if src[i+1] == '/' {
		if j := bytes.IndexByte(src[i:], '\n'); j >= 0 {
			return i + j - 1 // the line ending is the next token
		}
		return len(src) - 1
	}
	if j := bytes.Index(src[i+2:], []byte("*/")); j >= 0 {
		return i + 2 + j + 1
	}
	return len(src) - 1
}

// goQuoteEnd is the index of the quote that closes the string, raw
// string or rune literal opened at src[i], or of the line's last byte
// for an unclosed one (a raw string: the file's).
func goQuoteEnd(src []byte, i int) int {
	q := src[i]
	for j := i + 1; j < len(src); j++ {
		switch {
		case src[j] == q:
			return j
		case src[j] == '\\' && q != '`':
			j++
		case src[j] == '\n' && q != '`':
			return j - 1
		}
	}
	return len(src) - 1
}

// blankBodies is blankGoBodies; a test compares the outline without it.
var blankBodies = blankGoBodies
