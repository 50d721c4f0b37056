package outline

import (
	"regexp"
	"strings"
	"sync"
)

// pattern is a line that starts a declaration in a brace language. Its
// regular expression runs on the line's code, trimmed; its first group
// is the name.
type pattern struct {
	re   *regexp.Regexp
	kind Kind
	// members names the set of patterns of the declarations its body
	// holds (a class's methods), or "" when it holds none.
	members string
	// hidden: a container only (a Rust impl block or module, a
	// TypeScript namespace), not listed itself.
	hidden bool
	// How the name is found, when not by the first group alone.
	implTarget bool // a Rust impl header: the type it is for
	proto      bool // Foo.prototype.bar = function: container and name
	ctor       bool // a Java constructor: the name is the class's
	nameAtEnd  bool // typedef struct { ... } Name;
	knr        bool // a C function whose type is on the line above
	// Where it applies.
	col0      bool // the line starts at column 0 (C)
	directive bool // a preprocessor directive, matched on the line's text (C)
	testable  bool // #[cfg(test)] above makes it test code (Rust modules)
}

// langRules are a brace language's patterns, by set ("top" for the
// top level), and how a member's name is joined to its container's.
type langRules struct {
	sep  string
	sets map[string][]pattern
}

// keywords are words a pattern may take for a name but that name
// nothing.
var keywords = map[string]bool{
	"if": true, "for": true, "while": true, "switch": true, "catch": true, "return": true, "function": true,
	"new": true, "await": true, "else": true, "do": true, "typeof": true, "super": true, "this": true, "throw": true,
	"with": true, "yield": true, "delete": true, "void": true, "import": true, "export": true, "sizeof": true,
	"case": true, "default": true, "try": true, "finally": true, "goto": true, "defined": true,
	"__attribute__": true, "__declspec": true, "__asm__": true, "asm": true,
}

// Pieces the patterns share.
const (
	jsName   = `#?[A-Za-z_$][\w$]*`
	jsExport = `(?:export\s+)?(?:default\s+)?(?:declare\s+)?`
	jsArrow  = `(?:async\s+)?(?:function\b|(?:<[^>]*>\s*)?\([^)]*\)\s*(?::[^=]*)?=>|[A-Za-z_$][\w$]*\s*=>|\(\s*$)`
	rsPub    = `(?:pub(?:\s*\([^)]*\))?\s+)?`
	javaMods = `(?:(?:public|protected|private|static|final|abstract|synchronized|native|default|strictfp|transient|volatile|sealed|non-sealed)\s+)*`
	javaType = `[\w$.]+(?:<.*>)?(?:\[\])*\s+`
)

// braceRules are the patterns of each brace language, compiled on first
// use.
var braceRules = sync.OnceValue(func() map[Lang]*langRules {
	re := regexp.MustCompile
	return map[Lang]*langRules{
		JS: {sep: ".", sets: map[string][]pattern{
			"top": {
				{re: re(`^` + jsExport + `(?:async\s+)?function\b\s*\*?\s*([A-Za-z_$][\w$]*)`), kind: Func},
				{re: re(`^` + jsExport + `(?:abstract\s+)?class\s+([A-Za-z_$][\w$]*)`), kind: Type, members: "class"},
				{re: re(`^` + jsExport + `interface\s+([A-Za-z_$][\w$]*)`), kind: Type, members: "interface"},
				{re: re(`^` + jsExport + `(?:const\s+)?enum\s+([A-Za-z_$][\w$]*)`), kind: Type},
				{re: re(`^` + jsExport + `type\s+([A-Za-z_$][\w$]*)\s*(?:<|=)`), kind: Type},
				{re: re(`^` + jsExport + `(?:namespace|module)\s+([A-Za-z_$][\w$.]*)\s*\{`), members: "top", hidden: true},
				{re: re(`^` + jsExport + `(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*(?::[^=]*)?=\s*` + jsArrow), kind: Func},
				{re: re(`^` + jsExport + `(?:const|let|var)\s+([A-Za-z_$][\w$]*)`), kind: Value},
				{re: re(`^([A-Za-z_$][\w$]*)\.prototype\.([A-Za-z_$][\w$]*)\s*=\s*(?:async\s+)?function\b`), kind: Func, proto: true},
				{re: re(`^(?:module\.)?exports\.([A-Za-z_$][\w$]*)\s*=\s*` + jsArrow), kind: Func},
			},
			"class": {
				{re: re(`^(?:(?:public|private|protected|static|readonly|override|declare|accessor)\s+)*(` + jsName + `)\s*[?!]?\s*(?::[^=]*)?=\s*` + jsArrow), kind: Func},
				{re: re(`^(?:(?:public|private|protected|static|readonly|override|abstract|async|declare|get|set)\s+)*\*?\s*(` + jsName + `)\s*[?!]?\s*(?:<[^>]*>)?\s*\(`), kind: Func},
				{re: re(`^(?:(?:public|private|protected|static|readonly|override|declare|accessor|abstract)\s+)*(` + jsName + `)\s*[?!]?\s*(?:[:=;]|$)`), kind: Value},
			},
			"interface": {
				{re: re(`^(?:readonly\s+)?([A-Za-z_$][\w$]*)\s*\??\s*(?:<[^>]*>)?\s*\(`), kind: Func},
				{re: re(`^(?:readonly\s+)?([A-Za-z_$][\w$]*)\s*\??\s*:`), kind: Value},
			},
		}},
		Rust: {sep: "::", sets: map[string][]pattern{
			"top": {
				{re: re(`^` + rsPub + `(?:default\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?(?:extern\s+(?:"[^"]*"\s+)?)?fn\s+([A-Za-z_]\w*)`), kind: Func},
				{re: re(`^` + rsPub + `(?:struct|enum|union|type)\s+([A-Za-z_]\w*)`), kind: Type},
				{re: re(`^` + rsPub + `(?:unsafe\s+)?(?:auto\s+)?trait\s+([A-Za-z_]\w*)`), kind: Type, members: "impl"},
				{re: re(`^(?:unsafe\s+)?impl\b(.*)`), members: "impl", hidden: true, implTarget: true},
				{re: re(`^` + rsPub + `mod\s+([A-Za-z_]\w*)\s*\{`), members: "top", hidden: true, testable: true},
				{re: re(`^` + rsPub + `(?:const|static)\s+(?:mut\s+)?([A-Za-z_]\w*)\s*:`), kind: Value},
				{re: re(`^macro_rules!\s*([A-Za-z_]\w*)`), kind: Func},
			},
			"impl": {
				{re: re(`^` + rsPub + `(?:default\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?(?:extern\s+(?:"[^"]*"\s+)?)?fn\s+([A-Za-z_]\w*)`), kind: Func},
				{re: re(`^` + rsPub + `const\s+([A-Za-z_]\w*)\s*:`), kind: Value},
				{re: re(`^` + rsPub + `type\s+([A-Za-z_]\w*)`), kind: Type},
			},
		}},
		Java: {sep: ".", sets: map[string][]pattern{
			"top": {
				{re: re(`^` + javaMods + `(?:class|interface|enum|record|@interface)\s+([A-Za-z_$][\w$]*)`), kind: Type, members: "class"},
			},
			"class": {
				{re: re(`^` + javaMods + `(?:class|interface|enum|record|@interface)\s+([A-Za-z_$][\w$]*)`), kind: Type, members: "class"},
				{re: re(`^(?:(?:public|protected|private)\s+)?([A-Z][\w$]*)\s*\(`), kind: Func, ctor: true},
				{re: re(`^` + javaMods + `(?:<[^>]*>\s+)?` + javaType + `([A-Za-z_$][\w$]*)\s*\(`), kind: Func},
				{re: re(`^` + javaMods + javaType + `([A-Za-z_$][\w$]*)\s*(?:=|;|$)`), kind: Value},
			},
		}},
		C: {sep: ".", sets: map[string][]pattern{
			"top": {
				{re: re(`^#\s*define\s+([A-Za-z_]\w*)\(`), kind: Func, directive: true},
				{re: re(`^#\s*define\s+([A-Za-z_]\w*)`), kind: Value, directive: true},
				{re: re(`^typedef\s+(?:struct|union|enum)\b[^;{]*\{`), kind: Type, nameAtEnd: true},
				{re: re(`^(?:typedef\s+)?(?:struct|union|enum)\s+([A-Za-z_]\w*)\s*(?:\{|$)`), kind: Type},
				{re: re(`^typedef\s+[^;{]*\(\s*\*\s*([A-Za-z_]\w*)\s*\)`), kind: Type},
				{re: re(`^typedef\s+[^;{]*?\b([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*;`), kind: Type},
				{re: re(`^(?:[A-Za-z_]\w*[\s\*]+)+\**([A-Za-z_]\w*)\s*\(`), kind: Func, col0: true},
				{re: re(`^([A-Za-z_]\w*)\s*\(`), kind: Func, col0: true, knr: true},
			},
		}},
	}
})

// matched is a declaration a pattern found.
type matched struct {
	p    *pattern
	name string
	cont string // the container the line itself names (Foo.prototype.bar)
}

// match finds the pattern of set that line i starts, inside the
// container cont.
func (f *braceFile) match(set string, i int, cont string) (matched, bool) {
	l := f.lines[i]
	code := strings.TrimSpace(l.code)
	directive := f.lang == C && strings.HasPrefix(strings.TrimSpace(l.text), "#")
	if directive {
		code = strings.TrimSpace(l.text)
	}
	if code == "" {
		return matched{}, false
	}
	if f.lang == Java || f.lang == JS {
		code = stripAnnotations(code)
	}
	rules := f.rules.sets[set]
	for k := range rules {
		p := &rules[k]
		if p.directive != directive || p.col0 && (l.code[0] == ' ' || l.code[0] == '\t') {
			continue
		}
		m := p.re.FindStringSubmatch(code)
		if m == nil {
			continue
		}
		var name, owner string
		if len(m) > 1 {
			name = m[1]
		}
		switch {
		case p.implTarget:
			name = implTarget(name)
		case p.proto:
			owner, name = m[1], m[2]
		case p.ctor && name != containerName(cont):
			continue
		case p.knr && !typeLine(f.lines, i):
			continue
		}
		if (name == "" && !p.nameAtEnd) || keywords[name] || strings.HasPrefix(m[0], "return ") {
			continue
		}
		return matched{p: p, name: name, cont: owner}, true
	}
	return matched{}, false
}

var annotationRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:@[\w.]+(?:\([^)]*\))?\s+)+`)
})

// stripAnnotations removes the annotations or decorators a line starts
// with: "@Override public void run()" is "public void run()".
func stripAnnotations(code string) string {
	if !strings.HasPrefix(code, "@") {
		return code
	}
	return annotationRe().ReplaceAllString(code, "")
}

// implTarget is the type a Rust impl header is for: "<T> fmt::Display
// for Value<T> {" is Value.
func implTarget(h string) string {
	h = strings.TrimSpace(h)
	if strings.HasPrefix(h, "<") {
		depth := 0
		for i, c := range h {
			if c == '<' {
				depth++
			} else if c == '>' {
				depth--
				if depth == 0 {
					h = h[i+1:]
					break
				}
			}
		}
	}
	for _, stop := range []string{"{", " where "} {
		if i := strings.Index(h, stop); i >= 0 {
			h = h[:i]
		}
	}
	if i := strings.LastIndex(h, " for "); i >= 0 {
		h = h[i+5:]
	}
	h = strings.TrimSpace(h)
	for _, p := range []string{"&", "mut ", "dyn "} {
		h = strings.TrimSpace(strings.TrimPrefix(h, p))
	}
	if i := strings.IndexByte(h, '<'); i >= 0 {
		h = h[:i]
	}
	if i := strings.LastIndex(h, "::"); i >= 0 {
		h = h[i+2:]
	}
	return pyName(strings.TrimSpace(h))
}

var typedefNameRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\}\s*\**\s*([A-Za-z_]\w*)`)
})

// cTypedefName is the name after the closing brace of typedef struct {
// ... } Name;.
func cTypedefName(code string) string {
	if m := typedefNameRe().FindStringSubmatch(code); m != nil {
		return m[1]
	}
	return ""
}

var typeLineRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z_][\w\s\*]*$`)
})

// typeLine reports whether the line above line i holds only a type, as
// in a C definition written "static int\nname(void)".
func typeLine(lines []braceLine, i int) bool {
	if i == 0 {
		return false
	}
	prev := strings.TrimSpace(lines[i-1].code)
	switch prev {
	case "", "else", "return", "do", "case", "default", "goto":
		return false
	}
	return typeLineRe().MatchString(prev)
}
