package outline

import (
	"strings"
)

// braceLine is a line of a brace language as the outline sees it.
type braceLine struct {
	text string // as written, without its line ending
	// code is text with the insides of strings and comments blanked
	// (each byte a space), so that braces and patterns are code's own.
	code string
	// inside: the line starts inside a comment or a string.
	inside bool
	// depth is the braces open at the line's start.
	depth int
}

// lexConf is what a language's lexer must know.
type lexConf struct {
	charLits   bool // ' opens a character literal when one follows (C, Java, Rust); else a string
	template   bool // ` opens a template literal, with ${} inside (JS)
	regex      bool // a '/' where an operand starts opens a regular expression (JS)
	rawStrings bool // r"..." and r#"..."# (Rust)
	multiline  bool // "..." may run over lines (Rust)
	textBlocks bool // """...""" (Java)
	nested     bool // /* */ comments nest (Rust)
	directives bool // a line starting with '#' is a preprocessor directive, blanked (C)
}

var lexConfs = map[Lang]lexConf{
	JS:   {template: true, regex: true},
	Rust: {charLits: true, rawStrings: true, multiline: true, nested: true},
	Java: {charLits: true, textBlocks: true},
	C:    {charLits: true, directives: true},
}

// lexer state between bytes, and between lines.
type lexer struct {
	conf    lexConf
	comment int    // block comments open
	quote   string // the string open: `"`, `'`, "`", `"""` or a raw string's closing `"##`
	tmpl    []int  // for each ${ open in a template literal, the brace depth it opened at
	depth   int
	cont    bool // a directive continues on the next line
}

// lexBraces splits src into lines and blanks the insides of their
// strings and comments.
func lexBraces(lang Lang, src []byte) []braceLine {
	text := strings.ReplaceAll(string(src), "\r\n", "\n")
	raw := strings.Split(text, "\n")
	lines := make([]braceLine, len(raw))
	lx := &lexer{conf: lexConfs[lang]}
	for n, t := range raw {
		lines[n] = braceLine{text: t, inside: lx.comment > 0 || lx.quote != "", depth: lx.depth}
		lines[n].code = lx.line(t)
	}
	return lines
}

// line lexes one line and returns its code.
func (lx *lexer) line(t string) string {
	code := []byte(t)
	if lx.conf.directives && (lx.cont || strings.HasPrefix(strings.TrimSpace(t), "#")) && lx.comment == 0 {
		lx.cont = strings.HasSuffix(t, `\`)
		for i := range code {
			code[i] = ' '
		}
		return string(code)
	}
	for i := 0; i < len(t); {
		i = lx.step(t, code, i)
	}
	if lx.quote != "" && !lx.conf.multiline && lx.quote != "`" && lx.quote != `"""` && !strings.HasSuffix(t, `\`) {
		lx.quote = "" // an unclosed string ends with its line
	}
	return string(code)
}

// step lexes the token at t[i], blanks it in code when it is not code,
// and returns where the next one starts.
func (lx *lexer) step(t string, code []byte, i int) int {
	blank := func(from, to int) int {
		for k := from; k < to && k < len(code); k++ {
			code[k] = ' '
		}
		return to
	}
	switch {
	case lx.comment > 0:
		if strings.HasPrefix(t[i:], "*/") {
			lx.comment--
			return blank(i, i+2)
		}
		if lx.conf.nested && strings.HasPrefix(t[i:], "/*") {
			lx.comment++
			return blank(i, i+2)
		}
		return blank(i, i+1)
	case lx.quote != "":
		return lx.inString(t, code, i, blank)
	}
	c := t[i]
	switch {
	case strings.HasPrefix(t[i:], "//"):
		return blank(i, len(t))
	case strings.HasPrefix(t[i:], "/*"):
		lx.comment = 1
		return blank(i, i+2)
	case c == '{':
		lx.depth++
	case c == '}':
		if n := len(lx.tmpl); n > 0 && lx.tmpl[n-1] == lx.depth {
			lx.tmpl = lx.tmpl[:n-1]
			lx.quote = "`"
			return i + 1
		}
		lx.depth--
	case c == '"' && lx.conf.textBlocks && strings.HasPrefix(t[i:], `"""`):
		lx.quote = `"""`
		return i + 3
	case c == '"', c == '`' && lx.conf.template:
		lx.quote = string(c)
	case c == '\'':
		if !lx.conf.charLits {
			lx.quote = "'"
		} else if j := charLiteralEnd(t, i); j > i {
			return blank(i+1, j) + 1
		}
	case c == 'r' && lx.conf.rawStrings:
		if q, n := rawStringOpen(t, i); n > 0 {
			lx.quote = q
			return i + n
		}
	case c == '/' && lx.conf.regex && regexCanStart(t, i):
		if j := regexEnd(t, i); j > i {
			return blank(i+1, j) + 1
		}
	}
	return i + 1
}

// inString lexes t[i] inside the string lx.quote.
func (lx *lexer) inString(t string, code []byte, i int, blank func(int, int) int) int {
	switch {
	case t[i] == '\\' && !strings.HasPrefix(lx.quote, `"#`) && lx.quote != `"`+"\x00":
		return blank(i, i+2)
	case lx.quote == "`" && strings.HasPrefix(t[i:], "${"):
		lx.tmpl = append(lx.tmpl, lx.depth)
		lx.quote = ""
		return i + 2
	case strings.HasPrefix(t[i:], strings.TrimSuffix(lx.quote, "\x00")):
		n := len(strings.TrimSuffix(lx.quote, "\x00"))
		lx.quote = ""
		return i + n
	}
	return blank(i, i+1)
}

// rawStringOpen reports a Rust raw string opening at t[i] ('r', maybe
// after 'b'): the text that closes it and the length of its opening.
// A plain r"..." is closed by `"` with no escapes, written `"` + NUL.
func rawStringOpen(t string, i int) (string, int) {
	if i > 0 && t[i-1] != 'b' && isIdentRune(rune(t[i-1])) {
		return "", 0
	}
	j := i + 1
	for j < len(t) && t[j] == '#' {
		j++
	}
	if j >= len(t) || t[j] != '"' {
		return "", 0
	}
	hashes := j - i - 1
	if hashes == 0 {
		return "\"\x00", 2
	}
	return `"` + strings.Repeat("#", hashes), j - i + 1
}

// charLiteralEnd is the index of the quote that closes a character
// literal opened at t[i] ('x', '\n', '\u{1F600}'), or -1 when none does
// (a Rust lifetime, an apostrophe).
func charLiteralEnd(t string, i int) int {
	switch {
	case i+2 < len(t) && t[i+1] != '\\' && t[i+2] == '\'':
		return i + 2
	case i+1 < len(t) && t[i+1] == '\\':
		if j := strings.IndexByte(t[i+2:min(len(t), i+14)], '\''); j >= 0 {
			return i + 2 + j
		}
	}
	// A multi-byte character: 'é'.
	if i+1 < len(t) && t[i+1] >= 0x80 {
		if j := strings.IndexByte(t[i+1:min(len(t), i+6)], '\''); j >= 0 {
			return i + 1 + j
		}
	}
	return -1
}

// regexCanStart reports whether a '/' at t[i] starts a regular
// expression literal: after an operator, an opening bracket, a comma
// or the start of the line, not after an operand.
func regexCanStart(t string, i int) bool {
	if i+1 < len(t) && (t[i+1] == '/' || t[i+1] == '*') {
		return false
	}
	prev := strings.TrimRight(t[:i], " \t")
	if prev == "" {
		return true
	}
	for _, kw := range []string{"return", "typeof", "case", "in", "of", "yield"} {
		if strings.HasSuffix(prev, kw) && (len(prev) == len(kw) || !isIdentRune(rune(prev[len(prev)-len(kw)-1]))) {
			return true
		}
	}
	return strings.ContainsRune("(,=:[!&|?{};+-*%<>~^", rune(prev[len(prev)-1]))
}

// maxRegexLiteral bounds the search for a regular expression's end, so
// that a line of many '/' costs what it is long.
const maxRegexLiteral = 512

// regexEnd is the index of the '/' that closes a regular expression
// opened at t[i] on the same line, or -1.
func regexEnd(t string, i int) int {
	class := false
	for j := i + 1; j < len(t) && j <= i+maxRegexLiteral; j++ {
		switch t[j] {
		case '\\':
			j++
		case '[':
			class = true
		case ']':
			class = false
		case '/':
			if !class {
				return j
			}
		}
	}
	return -1
}
