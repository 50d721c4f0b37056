package offline

import (
	"strings"
	"unicode/utf8"
)

// The model has one stemmer, codeStem: the concepts of a question, the
// words of the code they are matched against, the vocabulary's words and
// the plain words of a task that are grepped (wordStem) all meet through
// it.

// searchForm is the substring a search looks for to find the words of
// stem s: a final "i" that stands for "y" is dropped, so that "retri"
// finds retry and retries.
func searchForm(s string) string {
	if len(s) >= 4 && strings.HasSuffix(s, "i") {
		return s[:len(s)-1]
	}
	return s
}

// wordStem is the form a plain word of a task is searched by: the
// searchForm of its codeStem, so that "refunds" finds Refund and
// "applied" finds apply, or the word whole when that would keep fewer
// than four letters ("sets" stays "sets", not "set").
func wordStem(w string) string {
	if s := searchForm(codeStem(w)); utf8.RuneCountInString(s) >= 4 {
		return s
	}
	return w
}

// codeStem reduces a lower-case word to a stem for matching the words of
// code against the words of a question: "retries", "retried", "retrying"
// and "retry" all give "retri"; "parse", "parsed" and "parser" give "pars".
func codeStem(w string) string {
	if len(w) <= 3 {
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies") || strings.HasSuffix(w, "ied"):
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"), strings.HasSuffix(w, "xes"), strings.HasSuffix(w, "ches"),
		strings.HasSuffix(w, "shes"), strings.HasSuffix(w, "zes"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		w = w[:len(w)-1]
	}
	switch {
	case len(w) > 5 && strings.HasSuffix(w, "ing"):
		w = w[:len(w)-3]
	case len(w) > 4 && (strings.HasSuffix(w, "ed") && !strings.HasSuffix(w, "eed") || strings.HasSuffix(w, "er")):
		w = w[:len(w)-2]
	}
	switch {
	case len(w) > 3 && strings.HasSuffix(w, "e"):
		w = w[:len(w)-1]
	case len(w) > 3 && strings.HasSuffix(w, "y"):
		w = w[:len(w)-1] + "i"
	}
	return w
}
