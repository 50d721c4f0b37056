package tools

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/troupe-dev/troupe/builtin/outline"
)

// maxQueryWords bounds the words of a query; more are ignored.
const maxQueryWords = 32

// symbolsDocScan is how much of a doc comment is searched for the
// query's words.
const symbolsDocScan = 4 << 10

// queryWord is a word of a symbols query: lower case, without
// underscores, so that "read_header" and "readHeader" both find
// readHeaderTimeout and read_header_timeout.
type queryWord struct {
	text string
	// nameOnly: an English function word ("the", "how"), which would
	// match the start of many a doc word; it matches names only.
	nameOnly bool
}

// nameOnlyWords are the function words that match names only.
var nameOnlyWords = map[string]bool{
	"an": true, "the": true, "and": true, "or": true, "of": true, "to": true, "in": true, "on": true, "at": true,
	"by": true, "for": true, "with": true, "from": true, "is": true, "are": true, "was": true, "be": true,
	"it": true, "its": true, "this": true, "that": true, "how": true, "what": true, "where": true, "when": true,
	"which": true, "who": true, "why": true, "does": true, "do": true, "did": true, "can": true, "not": true,
	"no": true, "as": true, "if": true, "into": true, "than": true, "then": true, "there": true,
}

// parseQuery splits a query into its words: runs of letters, digits
// and underscores, of two letters or more, each once, at most
// maxQueryWords.
func parseQuery(q string) []queryWord {
	var out []queryWord
	seen := make(map[string]bool)
	for _, f := range strings.FieldsFunc(q, func(r rune) bool { return !isWordRune(r) }) {
		w := strings.ToLower(strings.ReplaceAll(f, "_", ""))
		if utf8.RuneCountInString(w) < 2 || len(out) == maxQueryWords {
			continue
		}
		nameOnly := nameOnlyWords[w]
		if !nameOnly {
			w = trimEnding(w)
		}
		if seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, queryWord{text: w, nameOnly: nameOnly})
	}
	return out
}

// trimEnding drops an English plural or verb ending from w, so that
// "validated" finds validate and validation, "connections" connection
// and "parsing" parse: a word matches where a part starts with it, so
// a shorter word only finds more, and always what the whole word finds.
// What is left keeps at least four letters.
func trimEnding(w string) string {
	const minStem = 4
	cut := func(n int) string {
		s := w[:len(w)-n]
		// A doubled final consonant belongs to the ending: "stopped",
		// "running".
		if k := len(s); (n == 2 || n == 3) && k > minStem && s[k-1] == s[k-2] && !strings.ContainsRune("aeiousl", rune(s[k-1])) {
			s = s[:k-1]
		}
		return s
	}
	for _, e := range []struct {
		suffix string
		ok     func(stem string) bool
	}{
		{"ies", nil},
		{"ing", nil},
		{"ed", nil},
		{"es", func(stem string) bool {
			return strings.HasSuffix(stem, "s") || strings.HasSuffix(stem, "x") || strings.HasSuffix(stem, "ch") || strings.HasSuffix(stem, "sh")
		}},
		{"s", func(stem string) bool {
			return !strings.HasSuffix(stem, "s") && !strings.HasSuffix(stem, "u") && !strings.HasSuffix(stem, "i")
		}},
	} {
		if !strings.HasSuffix(w, e.suffix) || !isASCIILetters(w) {
			continue
		}
		stem := w[:len(w)-len(e.suffix)]
		if len(stem) < minStem || e.ok != nil && !e.ok(stem) {
			continue
		}
		return cut(len(e.suffix))
	}
	return w
}

func isASCIILetters(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return true
}

func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// identParts splits an identifier into its lower-case parts at
// underscores and case changes: "parseHTTPHeader2" is parse, http,
// header2; "read_header_timeout" is read, header, timeout.
func identParts(s string) []string {
	var parts []string
	for _, chunk := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		rs := []rune(chunk)
		start := 0
		for i := 1; i < len(rs); i++ {
			prev, cur := rs[i-1], rs[i]
			if unicode.IsUpper(cur) && (unicode.IsLower(prev) || unicode.IsDigit(prev)) ||
				unicode.IsUpper(cur) && unicode.IsUpper(prev) && i+1 < len(rs) && unicode.IsLower(rs[i+1]) {
				parts = append(parts, strings.ToLower(string(rs[start:i])))
				start = i
			}
		}
		parts = append(parts, strings.ToLower(string(rs[start:])))
	}
	return parts
}

// partsMatch reports whether w starts at a part boundary of parts:
// whether it is a prefix of the parts joined from one of them on.
func partsMatch(parts []string, w string) bool {
	for i := range parts {
		rest := w
		for j := i; j < len(parts); j++ {
			p := parts[j]
			if len(rest) <= len(p) {
				if strings.HasPrefix(p, rest) {
					return true
				}
				break
			}
			if !strings.HasPrefix(rest, p) {
				break
			}
			rest = rest[len(p):]
		}
	}
	return false
}

// joined is s in lower case without underscores: a word can match a
// name or doc only if it is a substring of this, which is quick to
// check first.
func joined(s string) string {
	return strings.ToLower(strings.ReplaceAll(s, "_", ""))
}

// declMatch is how a declaration matches a query.
type declMatch struct {
	name   bool   // a word matches its own name
	words  []bool // which words match its name, its container or its doc
	inName []bool // which match its name
	inDoc  []bool // which match its doc and not its name
	n      int    // how many match its name, its container or its doc
}

// matchDecl matches d against the words. A word counts when it matches
// d's name, its container's (a receiver, a class), or its doc comment;
// d matches when one matches its name or doc, not only its container.
func matchDecl(d *outline.Decl, words []queryWord) (declMatch, bool) {
	m := declMatch{words: make([]bool, len(words)), inName: make([]bool, len(words)), inDoc: make([]bool, len(words))}
	name, cont := joined(d.Name), joined(d.Container)
	var nameParts, contParts, docWords []string
	doc := d.Doc[:min(len(d.Doc), symbolsDocScan)]
	docJoined := ""
	own := false
	for i, w := range words {
		hit := false
		if strings.Contains(name, w.text) {
			if nameParts == nil {
				nameParts = identParts(d.Name)
			}
			if partsMatch(nameParts, w.text) {
				hit, m.name, own = true, true, true
				m.inName[i] = true
			}
		}
		if !hit && !w.nameOnly && doc != "" {
			if docJoined == "" {
				docJoined = joined(doc)
			}
			if strings.Contains(docJoined, w.text) {
				if docWords == nil {
					docWords = strings.FieldsFunc(doc, func(r rune) bool { return !isWordRune(r) })
				}
				if docMatch(docWords, w.text) {
					hit, own = true, true
					m.inDoc[i] = true
				}
			}
		}
		if !hit && cont != "" && strings.Contains(cont, w.text) {
			if contParts == nil {
				contParts = identParts(d.Container)
			}
			hit = partsMatch(contParts, w.text)
		}
		if hit {
			m.words[i] = true
			m.n++
		}
	}
	return m, own
}

// docMatch reports whether w matches the start of a part of one of the
// doc's words.
func docMatch(docWords []string, w string) bool {
	for _, dw := range docWords {
		if strings.Contains(joined(dw), w) && partsMatch(identParts(dw), w) {
			return true
		}
	}
	return false
}
