package offline

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCodeStem(t *testing.T) {
	for _, group := range [][]string{
		{"retry", "retries", "retried", "retrying"},
		{"parse", "parsed", "parser", "parsing", "parses"},
		{"cookie", "cookies"},
		{"decode", "decoded", "decoder", "decoding"},
		{"process", "processes"},
		{"redirect", "redirects", "redirected"},
	} {
		for _, w := range group[1:] {
			assert.Equal(t, codeStem(group[0]), codeStem(w), "%s and %s", group[0], w)
		}
	}
	assert.Equal(t, "status", codeStem("status"))
	assert.Equal(t, "exceed", codeStem("exceeds"), "not exce")
	assert.NotEqual(t, codeStem("read"), codeStem("ready"))
}

// A plain word of a task is searched by its stem, the same codeStem the
// ranking matches code with, as a substring: never shorter than four
// letters.
func TestWordStem(t *testing.T) {
	for in, want := range map[string]string{
		"refunds": "refund", "applied": "appl", "retries": "retr", "retry": "retr", "charging": "charg",
		"matches": "match", "charged": "charg", "class": "class", "status": "status",
		"uses": "uses", "bus": "bus", "discount": "discount", "sets": "sets", "parser": "pars",
	} {
		assert.Equal(t, want, wordStem(in), in)
	}
	for _, w := range []string{"retries", "parsed", "decoding", "cookies"} {
		assert.True(t, strings.HasPrefix(codeStem(w), wordStem(w)), "%s: %s is not a prefix of its codeStem %s", w, wordStem(w), codeStem(w))
	}
}
