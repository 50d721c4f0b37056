package offline

import (
	"strconv"
	"strings"
	"unicode"
)

// maxQuestions is how many questions of one task are handed to children,
// the delegate tool's limit of tasks per call.
const maxQuestions = 8

// maxLabel is the longest label of a delegated task.
const maxLabel = 32

// listItemRe finds a bulleted or numbered list item and its text.
var listItemRe = lazyRE(`^(\s*)(?:[-*+•]|\d+[.)])\s+(\S.*)$`)

// splitQuestions returns the questions of a task that explicitly asks
// several things: the items of a bulleted or numbered list, else the
// sentences that end with '?'. Only questions with search terms count,
// a question asked twice counts once, and a task with fewer than two
// questions gives nil. The split is mechanical: nothing is understood.
func splitQuestions(task string) []string {
	qs := listedQuestions(task)
	if len(qs) < 2 {
		qs = questionMarks(task)
	}
	var out []string
	seen := make(map[string]bool)
	for _, q := range qs {
		q = strings.Join(strings.Fields(q), " ")
		key := strings.ToLower(strings.TrimRight(q, "?.! "))
		if seen[key] || len(extractTerms(q)) == 0 {
			continue
		}
		seen[key] = true
		out = append(out, q)
	}
	if len(out) < 2 {
		return nil
	}
	return out
}

// listedQuestions returns the items of the task's top-level list, with
// their indented continuation lines. A list whose items are not
// questions counts only when the text around it asks nothing itself:
// "Where is X? It may be in:\n- a/\n- b/" asks one thing.
func listedQuestions(task string) []string {
	var (
		items   []string
		indent  = -1
		outside strings.Builder
		fenced  bool
		inItem  bool
	)
	for _, line := range strings.Split(task, "\n") {
		line = strings.TrimRight(line, "\r")
		if fenceRe.MatchString(line) {
			fenced = !fenced
			inItem = false
			continue
		}
		if fenced {
			continue
		}
		if m := listItemRe.FindStringSubmatch(line); m != nil && (indent < 0 || len(m[1]) <= indent) {
			indent = len(m[1])
			items = append(items, m[2])
			inItem = true
			continue
		}
		if inItem && strings.TrimSpace(line) != "" && len(line)-len(strings.TrimLeft(line, " \t")) > indent {
			items[len(items)-1] += " " + strings.TrimSpace(line)
			continue
		}
		inItem = false
		outside.WriteString(line)
		outside.WriteByte('\n')
	}
	if len(items) < 2 {
		return nil
	}
	asksItself := len(questionMarks(outside.String())) > 0
	for _, it := range items {
		if asksItself && !strings.HasSuffix(strings.TrimSpace(it), "?") {
			return nil
		}
	}
	return items
}

// questionMarks returns the sentences of text that end with a question
// mark followed by a space or the end, outside code spans and quotes.
// Text before a sentence's last line break, ". ", "! " or ": " is its
// preamble and is dropped: "Two questions: where is X? where is Y?"
// asks "where is X?" and "where is Y?".
func questionMarks(text string) []string {
	var (
		out     []string
		start   int
		quote   rune
		inQuote bool
	)
	rs := []rune(text)
	for i, r := range rs {
		switch {
		case inQuote:
			if r == quote || r == '\n' {
				inQuote = false
			}
		case r == '`' || r == '"':
			inQuote, quote = true, r
		case r == '\n':
			start = i + 1
		case (r == '.' || r == '!' || r == ':') && i+1 < len(rs) && unicode.IsSpace(rs[i+1]):
			start = i + 1
		case r == '?' && (i+1 == len(rs) || unicode.IsSpace(rs[i+1])):
			if q := strings.TrimSpace(string(rs[start : i+1])); q != "?" {
				out = append(out, q)
			}
			start = i + 1
		}
	}
	return out
}

// labels names the questions' tasks from their words, without stop
// words, lower case and joined with '-', at most maxLabel bytes; labels
// are unique, and a question with no usable word is "question-N".
func labels(qs []string) []string {
	out := make([]string, len(qs))
	used := make(map[string]bool)
	for i, q := range qs {
		var words []string
		for _, w := range strings.FieldsFunc(strings.ToLower(q), func(r rune) bool {
			return !('a' <= r && r <= 'z' || '0' <= r && r <= '9')
		}) {
			if !isStopWord(w) && len(w) > 1 {
				words = append(words, w)
			}
		}
		label := ""
		for _, w := range words {
			next := w
			if label != "" {
				next = label + "-" + w
			}
			if len(next) > maxLabel {
				if label == "" {
					label = w[:maxLabel]
				}
				break
			}
			label = next
		}
		if label == "" {
			label = "question-" + strconv.Itoa(i+1)
		}
		base := label
		for n := 2; used[label]; n++ {
			suffix := "-" + strconv.Itoa(n)
			label = base[:min(len(base), maxLabel-len(suffix))] + suffix
		}
		used[label] = true
		out[i] = label
	}
	return out
}
