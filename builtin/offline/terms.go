package offline

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// termKind orders the kinds of search term by how specific they are.
type termKind int

const (
	kindPart   termKind = iota // a part of a camelCase or snake_case identifier
	kindWord                   // an ordinary word
	kindName                   // a capitalised word mid-sentence or an acronym
	kindIdent                  // camelCase, snake_case, dotted or hyphenated
	kindQuoted                 // a quoted string, kept whole
)

var kindWeight = [...]float64{
	kindPart:   1.0,
	kindWord:   1.5,
	kindName:   2.0,
	kindIdent:  2.5,
	kindQuoted: 3.0,
}

// term is one search term with its weight for scoring.
type term struct {
	text   string
	lower  string
	kind   termKind
	weight float64
	pos    int // offset of its first appearance in the task
}

const (
	minTermLen = 3 // shorter words are dropped
	minPartLen = 4 // shorter identifier parts ("err", "ctx") are dropped
	maxQuoted  = 200
)

var (
	// quotedRes find quoted strings; quote is the byte length of the
	// quote characters around the first group.
	quotedRes = []struct {
		re    *lazyRegexp
		quote int
	}{
		{lazyRE("`([^`\n]+)`"), 1},
		{lazyRE(`"([^"\n]+)"`), 1},
		{lazyRE(`“([^”\n]+)”`), len("“")},
		{lazyRE(`‘([^’\n]+)’`), len("‘")},
		// Single quotes only at word boundaries, so that apostrophes
		// ("don't") do not open a quote.
		{lazyRE(`(?:^|[\s(\[{,:;=])'([^'\n]+)'(?:$|[\s)\]},.:;!?])`), 1},
	}
	compoundSepRe = lazyRE(`[.\-/:]+`)
)

// ExtractTerms returns the search terms the offline model derives from a
// task, best first: quoted strings, identifiers (with their camelCase and
// snake_case parts after them), then words, longer before shorter. Stop
// words and question words are dropped unless quoted or written as an
// identifier.
func ExtractTerms(task string) []string {
	terms := extractTerms(task)
	out := make([]string, len(terms))
	for i, t := range terms {
		out[i] = t.text
	}
	return out
}

// extractTerms returns the ranked terms of a task.
func extractTerms(task string) []term {
	c := collector{seen: make(map[string]int)}

	// Quoted strings first; they are blanked out of the text afterwards so
	// that their words are not taken again.
	rest := []byte(task)
	for _, qr := range quotedRes {
		for _, m := range qr.re.FindAllSubmatchIndex(rest, -1) {
			start, end := m[2], m[3]
			q := strings.TrimSpace(string(rest[start:end]))
			// Blank the quote and its content, byte for byte, so that
			// offsets stay valid and the text stays UTF-8.
			for i := start - qr.quote; i < end+qr.quote; i++ {
				rest[i] = ' '
			}
			if utf8.RuneCountInString(q) < 2 || len(q) > maxQuoted {
				continue
			}
			if isSingleIdent(q) {
				c.token(q, start, true, false)
			} else {
				c.add(q, kindQuoted, start)
			}
		}
	}
	text := string(rest)
	for _, m := range tokenSpans(text) {
		c.token(text[m[0]:m[1]], m[0], false, sentenceStart(text, m[0]))
	}

	terms := c.terms
	slices.SortStableFunc(terms, func(a, b term) int {
		switch {
		case a.weight != b.weight:
			if a.weight > b.weight {
				return -1
			}
			return 1
		case a.pos != b.pos:
			return a.pos - b.pos
		default:
			return strings.Compare(a.lower, b.lower)
		}
	})
	return terms
}

type collector struct {
	terms []term
	seen  map[string]int // lower → index in terms
}

// add records a term, keeping the strongest kind when it repeats.
func (c *collector) add(text string, kind termKind, pos int) {
	if text == "" {
		return
	}
	n := utf8.RuneCountInString(text)
	t := term{
		text:   text,
		lower:  strings.ToLower(text),
		kind:   kind,
		weight: kindWeight[kind] + float64(min(n, 20))/20,
		pos:    pos,
	}
	if i, ok := c.seen[t.lower]; ok {
		if kind > c.terms[i].kind {
			t.pos = c.terms[i].pos
			c.terms[i] = t
		}
		return
	}
	c.seen[t.lower] = len(c.terms)
	c.terms = append(c.terms, t)
}

// token classifies one token of the task and records it and its parts.
// quoted tokens keep their whole form whatever it is; atStart says the
// token opens a sentence, where capitals say nothing.
func (c *collector) token(tok string, pos int, quoted, atStart bool) {
	if !hasLetter(tok) {
		return
	}
	if compoundSepRe.MatchString(tok) {
		comps := compoundSepRe.Split(tok, -1)
		long := 0
		for _, p := range comps {
			if utf8.RuneCountInString(p) >= 2 {
				long++
			}
		}
		if long == 0 { // "e.g"
			return
		}
		switch {
		case quoted:
			c.add(tok, kindQuoted, pos)
		case !isStopWord(strings.ToLower(tok)) && utf8.RuneCountInString(tok) >= minTermLen:
			c.add(tok, kindIdent, pos)
		}
		for _, p := range comps {
			c.simple(p, pos, false, false, true)
		}
		return
	}
	c.simple(tok, pos, quoted, atStart, false)
}

// simple handles a token without dots, hyphens or slashes.
func (c *collector) simple(tok string, pos int, quoted, atStart, component bool) {
	if !hasLetter(tok) {
		return
	}
	parts := splitIdent(tok)
	long := utf8.RuneCountInString(tok) >= minTermLen
	stop := isStopWord(strings.ToLower(tok))
	switch {
	case quoted:
		c.add(tok, kindQuoted, pos)
	case len(parts) > 1:
		if long {
			c.add(tok, kindIdent, pos)
		}
	case isAcronym(tok):
		if long && !stop {
			c.add(tok, kindName, pos)
		}
	case startsUpper(tok) && !atStart && !component:
		// Capitalised mid-sentence: most likely an exported identifier,
		// so even a stop word ("Done", "Handle") is kept.
		if long {
			c.add(tok, kindName, pos)
		}
	case component:
		if utf8.RuneCountInString(tok) >= minPartLen && !stop {
			c.add(strings.ToLower(tok), kindPart, pos)
		}
	default:
		if long && !stop {
			c.add(wordStem(strings.ToLower(tok)), kindWord, pos)
		}
	}
	if len(parts) > 1 {
		for _, p := range parts {
			lp := strings.ToLower(p)
			if utf8.RuneCountInString(p) >= minPartLen && hasLetter(p) && !isStopWord(lp) {
				c.add(lp, kindPart, pos)
			}
		}
	}
}

// splitIdent splits snake_case and camelCase (acronyms kept together:
// "parseHTTPResponse" → parse, HTTP, Response).
func splitIdent(s string) []string {
	var parts []string
	for _, chunk := range strings.Split(s, "_") {
		rs := []rune(chunk)
		start := 0
		for i := 1; i < len(rs); i++ {
			prev, cur := rs[i-1], rs[i]
			boundary := unicode.IsUpper(cur) && (unicode.IsLower(prev) || unicode.IsDigit(prev)) ||
				unicode.IsUpper(cur) && unicode.IsUpper(prev) && i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if boundary {
				parts = append(parts, string(rs[start:i]))
				start = i
			}
		}
		if start < len(rs) {
			parts = append(parts, string(rs[start:]))
		}
	}
	return parts
}

// sentenceStart reports whether the token at offset i opens the text or a
// sentence.
func sentenceStart(text string, i int) bool {
	prefix := strings.TrimRightFunc(text[:i], unicode.IsSpace)
	if prefix == "" {
		return true
	}
	r, _ := utf8.DecodeLastRuneInString(prefix)
	return strings.ContainsRune(".?!:;#>*-", r)
}

func hasLetter(s string) bool {
	return strings.IndexFunc(s, unicode.IsLetter) >= 0
}

func startsUpper(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsUpper(r)
}

func isAcronym(s string) bool {
	letters := 0
	for _, r := range s {
		if unicode.IsLetter(r) {
			if !unicode.IsUpper(r) {
				return false
			}
			letters++
		}
	}
	return letters >= 2
}
