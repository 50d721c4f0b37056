package offline

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// The evaluation's baseline: a plain BM25 ranking of a tree's
// declarations, with no vocabulary and no code structure beyond where a
// declaration starts and ends. The offline model has to beat it on code
// it was not tuned on. It is built from scratch for every question, as
// the model searches from scratch too.

// BM25's usual parameters.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// bm25MaxFileSize bounds the files read; larger ones are left out.
const bm25MaxFileSize = 2 << 20

// bm25Doc is one declaration: where it is, and the counts of its tokens.
type bm25Doc struct {
	path      string // slash-separated, from the tree's root
	line, end int    // the declaration's first line (not its comment's) and its last
	symbol    string
	tf        map[string]int
	length    int
}

// bm25Rank ranks the declarations of the tree at root for question and
// returns the best limit of them as findings.
func bm25Rank(root, question string, limit int) ([]Finding, error) {
	docs, err := bm25Docs(root)
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return nil, nil
	}
	df := make(map[string]int)
	total := 0
	for _, d := range docs {
		total += d.length
		for tok := range d.tf {
			df[tok]++
		}
	}
	avg := float64(total) / float64(len(docs))
	var query []string
	for _, tok := range bm25Tokens(question) {
		if !slices.Contains(query, tok) {
			query = append(query, tok)
		}
	}
	n := float64(len(docs))
	scores := make([]float64, len(docs))
	for i, d := range docs {
		for _, tok := range query {
			tf := float64(d.tf[tok])
			if tf == 0 {
				continue
			}
			idf := math.Log(1 + (n-float64(df[tok])+0.5)/(float64(df[tok])+0.5))
			scores[i] += idf * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*float64(d.length)/avg))
		}
	}
	order := make([]int, len(docs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case scores[a] > scores[b]:
			return -1
		case scores[a] < scores[b]:
			return 1
		}
		return 0
	})
	var out []Finding
	for _, i := range order {
		if len(out) == limit || scores[i] == 0 {
			break
		}
		d := docs[i]
		out = append(out, Finding{Path: d.path, Line: d.line, EndLine: d.end, Symbol: d.symbol, Relevance: scores[i]})
	}
	return out, nil
}

// bm25Docs reads the declarations of the source files under root, in
// the order WalkDir visits them. Tests, vendored code, dependencies and
// hidden directories are left out.
func bm25Docs(root string) ([]bm25Doc, error) {
	var docs []bm25Doc
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := e.Name()
		if e.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || bm25SkipDirs[name]) {
				return filepath.SkipDir
			}
			return nil
		}
		lang := bm25Lang(name)
		if lang == "" || !e.Type().IsRegular() {
			return nil
		}
		if info, err := e.Info(); err != nil || info.Size() > bm25MaxFileSize {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if lang == "go" {
			docs = append(docs, bm25GoDocs(rel, src)...)
		} else {
			docs = append(docs, bm25PatternDocs(rel, src, bm25Patterns[lang])...)
		}
		return nil
	})
	return docs, err
}

var bm25SkipDirs = map[string]bool{
	"node_modules": true, "vendor": true, "testdata": true, "test": true, "tests": true,
	"__tests__": true, "__pycache__": true,
}

// bm25Lang is the language of a file by its name, or "" for a file that
// is not source code, or is a test.
func bm25Lang(name string) string {
	switch {
	case strings.HasSuffix(name, "_test.go"):
		return ""
	case strings.HasSuffix(name, ".go"):
		return "go"
	case strings.HasSuffix(name, ".py"):
		if strings.HasPrefix(name, "test_") || strings.HasSuffix(name, "_test.py") || name == "conftest.py" {
			return ""
		}
		return "py"
	case strings.HasSuffix(name, ".d.ts") || strings.Contains(name, ".test.") || strings.Contains(name, ".spec."):
		return ""
	case strings.HasSuffix(name, ".ts") || strings.HasSuffix(name, ".tsx") || strings.HasSuffix(name, ".js") ||
		strings.HasSuffix(name, ".mjs") || strings.HasSuffix(name, ".cjs") || strings.HasSuffix(name, ".jsx"):
		return "js"
	case strings.HasSuffix(name, ".rs"):
		return "rs"
	}
	return ""
}

// bm25GoDocs makes a document of each declaration of a Go file, parsed
// with go/parser: a function with its doc comment and body, a type, or a
// group of variables or constants. A file that does not parse has none.
func bm25GoDocs(path string, src []byte) []bm25Doc {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil
	}
	file := fset.File(f.Pos())
	doc := func(from, start, end token.Pos, symbol string) bm25Doc {
		text := string(src[file.Offset(from):file.Offset(end)])
		return newBM25Doc(path, file.Line(start), file.Line(end), symbol, text)
	}
	var docs []bm25Doc
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			from := d.Pos()
			if d.Doc != nil {
				from = d.Doc.Pos()
			}
			docs = append(docs, doc(from, d.Pos(), d.End(), d.Name.Name))
		case *ast.GenDecl:
			if d.Tok == token.IMPORT {
				continue
			}
			if d.Tok == token.TYPE && d.Lparen.IsValid() {
				for _, s := range d.Specs {
					ts := s.(*ast.TypeSpec)
					from := ts.Pos()
					if ts.Doc != nil {
						from = ts.Doc.Pos()
					}
					docs = append(docs, doc(from, ts.Pos(), ts.End(), ts.Name.Name))
				}
				continue
			}
			from := d.Pos()
			if d.Doc != nil {
				from = d.Doc.Pos()
			}
			docs = append(docs, doc(from, d.Pos(), d.End(), genDeclName(d)))
		}
	}
	return docs
}

func genDeclName(d *ast.GenDecl) string {
	for _, s := range d.Specs {
		switch s := s.(type) {
		case *ast.TypeSpec:
			return s.Name.Name
		case *ast.ValueSpec:
			if len(s.Names) > 0 {
				return s.Names[0].Name
			}
		}
	}
	return d.Tok.String()
}

// bm25Patterns are the lines that start a declaration, by language; a
// pattern's first group is the declaration's name.
var bm25Patterns = map[string][]*regexp.Regexp{
	"py": {
		regexp.MustCompile(`^\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)`),
	},
	"js": {
		regexp.MustCompile(`^\s*(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:async\s+)?function\s*\*?\s*([A-Za-z_$][\w$]*)`),
		regexp.MustCompile(`^\s*(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:abstract\s+)?(?:class|interface|enum|namespace)\s+([A-Za-z_$][\w$]*)`),
		regexp.MustCompile(`^(?:export\s+)?(?:declare\s+)?(?:type)\s+([A-Za-z_$][\w$]*)`),
		// Top-level bindings, and arrow functions at any depth.
		regexp.MustCompile(`^(?:export\s+)?(?:const|let|var)\s+([A-Za-z_$][\w$]*)`),
		regexp.MustCompile(`^\s*(?:export\s+)?(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*(?::[^=]*)?=\s*(?:async\s+)?(?:\([^)]*\)|[A-Za-z_$][\w$]*)\s*(?::[^=]*)?=>`),
		// Class members: indented one level, a name then its parameters.
		regexp.MustCompile(`^(?: {1,4}|\t)(?:(?:public|private|protected|static|readonly|override|abstract|async|get|set)\s+)*\*?(#?[A-Za-z_$][\w$]*)\s*(?:<[^>]*>)?\s*\([^;]*$`),
	},
	"rs": {
		regexp.MustCompile(`^\s*(?:pub(?:\([^)]*\))?\s+)?(?:default\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?(?:extern\s+"[^"]*"\s+)?fn\s+([A-Za-z_]\w*)`),
		regexp.MustCompile(`^\s*(?:pub(?:\([^)]*\))?\s+)?(?:struct|enum|trait|union|type|mod)\s+([A-Za-z_]\w*)`),
		regexp.MustCompile(`^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const|static)\s+([A-Z_][A-Z0-9_]*)\s*:`),
		regexp.MustCompile(`^\s*(?:unsafe\s+)?(impl\b.*?)\s*(?:\{|$)`),
		regexp.MustCompile(`^\s*macro_rules!\s*([A-Za-z_]\w*)`),
	},
}

// bm25Keywords start lines the class member pattern would otherwise take
// for a declaration.
var bm25Keywords = map[string]bool{
	"if": true, "for": true, "while": true, "switch": true, "catch": true, "return": true, "function": true,
	"new": true, "await": true, "else": true, "do": true, "typeof": true, "super": true, "this": true, "throw": true,
	"with": true, "yield": true, "delete": true, "void": true, "import": true, "export": true,
}

// bm25PatternDocs makes a document of each declaration a pattern finds:
// from its line to the line before the next declaration, with the
// comment lines just above it.
func bm25PatternDocs(path string, src []byte, patterns []*regexp.Regexp) []bm25Doc {
	lines := strings.Split(string(bytes.ReplaceAll(src, []byte("\r\n"), []byte("\n"))), "\n")
	type start struct {
		line   int // 0-based
		symbol string
	}
	var starts []start
	for i, l := range lines {
		for _, re := range patterns {
			m := re.FindStringSubmatch(l)
			if m == nil || bm25Keywords[strings.TrimPrefix(m[1], "#")] {
				continue
			}
			starts = append(starts, start{i, m[1]})
			break
		}
	}
	// Each declaration takes the comment lines (and decorators,
	// attributes) just above it from the one before.
	from := make([]int, len(starts))
	for k, s := range starts {
		from[k] = s.line
		for from[k] > 0 && (k == 0 || from[k]-1 > starts[k-1].line) && isCommentLine(lines[from[k]-1]) {
			from[k]--
		}
	}
	var docs []bm25Doc
	for k, s := range starts {
		end := len(lines)
		if k+1 < len(starts) {
			end = from[k+1]
		}
		for end > s.line+1 && strings.TrimSpace(lines[end-1]) == "" {
			end--
		}
		text := strings.Join(lines[from[k]:end], "\n")
		docs = append(docs, newBM25Doc(path, s.line+1, end, s.symbol, text))
	}
	return docs
}

func isCommentLine(l string) bool {
	t := strings.TrimSpace(l)
	for _, p := range []string{"//", "/*", "*", "#", "@"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

func newBM25Doc(path string, line, end int, symbol, text string) bm25Doc {
	d := bm25Doc{path: path, line: line, end: end, symbol: symbol, tf: make(map[string]int)}
	for _, tok := range bm25Tokens(text) {
		d.tf[tok]++
		d.length++
	}
	return d
}

// bm25Tokens splits text into lower-case words: runs of letters and
// digits, identifiers split at camelCase and snake_case boundaries, less
// stop words, single letters and numbers.
func bm25Tokens(text string) []string {
	var out []string
	for _, word := range strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		for _, part := range splitCamel(word) {
			p := strings.ToLower(part)
			if len([]rune(p)) < 2 || bm25Stop[p] || !strings.ContainsFunc(p, unicode.IsLetter) {
				continue
			}
			out = append(out, p)
		}
	}
	return out
}

// splitCamel splits an identifier at its case changes: "parseHTTPHeader"
// is parse, HTTP, Header.
func splitCamel(word string) []string {
	rs := []rune(word)
	var parts []string
	start := 0
	for i := 1; i < len(rs); i++ {
		lowerToUpper := unicode.IsUpper(rs[i]) && !unicode.IsUpper(rs[i-1])
		acronymEnd := unicode.IsUpper(rs[i-1]) && unicode.IsUpper(rs[i]) && i+1 < len(rs) && unicode.IsLower(rs[i+1])
		if lowerToUpper || acronymEnd {
			parts = append(parts, string(rs[start:i]))
			start = i
		}
	}
	return append(parts, string(rs[start:]))
}

// toSet is the set of the words in words.
func toSet(words string) map[string]bool {
	set := make(map[string]bool)
	for _, w := range strings.Fields(words) {
		set[w] = true
	}
	return set
}

// bm25Stop is a small generic English stop list.
var bm25Stop = toSet(`a an the and or but if then else than so of to in on at by for with from into onto
	as is are was were be been being am it its this that these those there here what which who whom whose
	where when why how do does did doing done can could should would will shall may might must not no nor
	yes i me my we us our you your he him his she her they them their all any both each few more most other
	some such only own same too very just also about after before again once while up down out over under
	between through during off`)

func TestBM25Tokens(t *testing.T) {
	got := bm25Tokens("Where does parseHTTPHeader read max_bytes? See RFC 7230, a URL.")
	want := []string{"parse", "http", "header", "read", "max", "bytes", "see", "rfc", "url"}
	if !slices.Equal(got, want) {
		t.Errorf("bm25Tokens = %q, want %q", got, want)
	}
}

func TestBM25Rank(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("limit.go", `package web

// LimitBody stops reading a request body past n bytes.
func LimitBody(n int) {
	_ = n
}

func unrelated() {}
`)
	write("limit_test.go", "package web\n\n// request body limit limit limit\nfunc TestLimit() {}\n")
	write("py/cache.py", "import os\n\n# Evicts the oldest entry.\ndef evict(cache):\n    cache.pop()\n\n\nclass Store:\n    def get(self, key):\n        return key\n")
	write("ts/retry.ts", "/** Waits longer after each failure. */\nexport function backoffDelay(failures: number) {\n  return 2 ** failures\n}\n\nexport class Client {\n  fetchAll(urls: string[]) {\n    return urls\n  }\n}\n")
	write("rs/lib.rs", "/// Parses a flag.\npub fn parse_flag(s: &str) -> bool {\n    s == \"-f\"\n}\n\nimpl Parser {\n    fn next_token(&mut self) {}\n}\n")
	tests := []struct {
		question string
		want     Finding
	}{
		{"how is the request body limited?", Finding{Path: "limit.go", Line: 4, EndLine: 6, Symbol: "LimitBody"}},
		{"which entry is evicted from the cache?", Finding{Path: "py/cache.py", Line: 4, EndLine: 5, Symbol: "evict"}},
		{"how long is the delay after a failure?", Finding{Path: "ts/retry.ts", Line: 2, EndLine: 4, Symbol: "backoffDelay"}},
		{"how does the client fetch all urls?", Finding{Path: "ts/retry.ts", Line: 7, EndLine: 10, Symbol: "fetchAll"}},
		{"where is a flag parsed?", Finding{Path: "rs/lib.rs", Line: 2, EndLine: 4, Symbol: "parse_flag"}},
		{"what is the next token?", Finding{Path: "rs/lib.rs", Line: 7, EndLine: 8, Symbol: "next_token"}},
	}
	for _, tt := range tests {
		got, err := bm25Rank(root, tt.question, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			t.Errorf("%q: no findings", tt.question)
			continue
		}
		got[0].Relevance = 0
		if got[0] != tt.want {
			t.Errorf("%q: first finding %+v, want %+v", tt.question, got[0], tt.want)
		}
	}
	if got, _ := bm25Rank(root, "the of and", 3); len(got) != 0 {
		t.Errorf("a question of stop words only: %+v, want no findings", got)
	}
}
