package offline

import (
	"regexp"
	"sync"
)

// lazyRegexp is a regular expression compiled on first use. The package's
// patterns, several with Unicode classes, take milliseconds to compile,
// which every troupe command would otherwise pay when it starts, searching
// or not. It has the methods of regexp.Regexp the package uses.
type lazyRegexp struct {
	pattern string
	once    sync.Once
	re      *regexp.Regexp
}

// lazyRE returns pattern, to be compiled (and checked, panicking as
// regexp.MustCompile does) on first use. Every pattern made this way is
// kept in lazyPatterns, so that a test compiles them all.
func lazyRE(pattern string) *lazyRegexp {
	l := &lazyRegexp{pattern: pattern}
	lazyPatterns = append(lazyPatterns, l)
	return l
}

var lazyPatterns []*lazyRegexp

func (l *lazyRegexp) get() *regexp.Regexp {
	l.once.Do(func() { l.re = regexp.MustCompile(l.pattern) })
	return l.re
}

func (l *lazyRegexp) MatchString(s string) bool            { return l.get().MatchString(s) }
func (l *lazyRegexp) FindStringSubmatch(s string) []string { return l.get().FindStringSubmatch(s) }
func (l *lazyRegexp) FindStringSubmatchIndex(s string) []int {
	return l.get().FindStringSubmatchIndex(s)
}
func (l *lazyRegexp) FindAllString(s string, n int) []string { return l.get().FindAllString(s, n) }
func (l *lazyRegexp) FindAllStringIndex(s string, n int) [][]int {
	return l.get().FindAllStringIndex(s, n)
}
func (l *lazyRegexp) FindAllStringSubmatchIndex(s string, n int) [][]int {
	return l.get().FindAllStringSubmatchIndex(s, n)
}
func (l *lazyRegexp) ReplaceAllString(src, repl string) string {
	return l.get().ReplaceAllString(src, repl)
}
func (l *lazyRegexp) Split(s string, n int) []string { return l.get().Split(s, n) }
func (l *lazyRegexp) FindAllSubmatchIndex(b []byte, n int) [][]int {
	return l.get().FindAllSubmatchIndex(b, n)
}
