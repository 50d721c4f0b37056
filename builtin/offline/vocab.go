package offline

import (
	_ "embed"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// vocabulary maps the words people use in questions to the words code
// uses for the same thing (vocab.txt). Keys and values are plain
// lower-case words; both sides are stemmed with codeStem when used. An
// entry is only a hint for the search: a word always also stands for
// itself. It is parsed on first use, not when the program starts: most
// commands never search.
var vocabulary = sync.OnceValue(func() map[string][]string {
	v, err := parseVocabulary(vocabularyFile)
	if err != nil {
		panic("offline: the embedded vocab.txt is malformed (its tests say where): " + err.Error())
	}
	return v
})

// stopWords are the words dropped from tasks (stopwords.txt), parsed on
// first use.
var stopWords = sync.OnceValue(func() map[string]bool {
	set, err := parseWordList(stopWordsFile)
	if err != nil {
		panic("offline: the embedded stopwords.txt is malformed (its tests say where): " + err.Error())
	}
	return set
})

// isStopWord reports whether the lower-case word w says nothing about
// where an answer is.
func isStopWord(w string) bool { return stopWords()[w] }

var (
	//go:embed vocab.txt
	vocabularyFile string
	//go:embed stopwords.txt
	stopWordsFile string

	vocabLineRe = lazyRE(`^([a-z]+): ([a-z][a-z0-9_]*(?: [a-z][a-z0-9_]*)*)$`)
	wordsLineRe = lazyRE(`^[a-z]+(?: [a-z]+)*$`)
)

// dataLines calls fn with each line of a data file that is neither
// blank nor a comment, and its line number.
func dataLines(text string, fn func(n int, line string) error) error {
	for i, line := range strings.Split(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := fn(i+1, line); err != nil {
			return err
		}
	}
	return nil
}

// parseVocabulary reads "word: code words" lines. A word defined twice,
// a code word listed twice or a word listing itself is an error.
func parseVocabulary(text string) (map[string][]string, error) {
	v := make(map[string][]string)
	err := dataLines(text, func(n int, line string) error {
		m := vocabLineRe.FindStringSubmatch(line)
		if m == nil {
			return fmt.Errorf("line %d: %q is not \"word: code words\" in lower case, separated by single spaces", n, line)
		}
		k, vals := m[1], strings.Fields(m[2])
		if _, ok := v[k]; ok {
			return fmt.Errorf("line %d: %q is defined twice", n, k)
		}
		for i, w := range vals {
			if w == k || slices.Contains(vals[:i], w) {
				return fmt.Errorf("line %d: %q lists %q twice (a word always stands for itself)", n, k, w)
			}
		}
		v[k] = vals
		return nil
	})
	return v, err
}

// parseWordList reads lines of lower-case words separated by single
// spaces. A word listed twice is an error.
func parseWordList(text string) (map[string]bool, error) {
	set := make(map[string]bool)
	err := dataLines(text, func(n int, line string) error {
		if !wordsLineRe.MatchString(line) {
			return fmt.Errorf("line %d: %q is not lower-case words separated by single spaces", n, line)
		}
		for _, w := range strings.Fields(line) {
			if set[w] {
				return fmt.Errorf("line %d: %q is listed twice", n, w)
			}
			set[w] = true
		}
		return nil
	})
	return set, err
}
