package offline

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVocabularyFile checks vocab.txt: its rule is written at its top;
// every line that is not a comment is "word: code words" in lower case;
// no word is defined twice, nor two words of one stem; no entry lists a
// code word twice, itself or its own stem; no word is a stop word or too
// short to be searched.
func TestVocabularyFile(t *testing.T) {
	assert.Contains(t, vocabularyFile, "# The rule: general programming synonyms only.")
	v, err := parseVocabulary(vocabularyFile)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, len(v), 100, "entries")
	for n, line := range strings.Split(vocabularyFile, "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			assert.Regexp(t, `^[a-z]+: [a-z][a-z0-9_]*( [a-z][a-z0-9_]*)*$`, line, "vocab.txt:%d", n+1)
		}
	}
	byStem := make(map[string]string)
	for _, word := range slices.Sorted(maps.Keys(v)) {
		s := codeStem(word)
		if other, ok := byStem[s]; ok {
			t.Errorf("vocab.txt: %q and %q share the stem %q: make them one line", other, word, s)
		}
		byStem[s] = word
		assert.False(t, isStopWord(word), "vocab.txt: %q is a stop word, so it never reaches the vocabulary", word)
		assert.GreaterOrEqual(t, len(word), minTermLen, "vocab.txt: %q is shorter than a search term", word)
		for _, c := range v[word] {
			assert.NotEqual(t, s, codeStem(c), "vocab.txt: %q lists %q, its own stem", word, c)
		}
	}
}

// The words the evaluation's answers are named by, which a vocabulary
// fitted to its questions once listed, are in no entry.
func TestVocabularyNamesNoEvaluationAnswer(t *testing.T) {
	v, err := parseVocabulary(vocabularyFile)
	require.NoError(t, err)
	for word, code := range v {
		for _, w := range append([]string{word}, code...) {
			for _, answer := range []string{"compare_digest", "archive", "slug", "migrate", "canonical", "director", "truth", "excerpt", "sniff", "dedup", "rotate", "prune", "multipart", "mux"} {
				assert.NotEqual(t, answer, w, "vocab.txt: %s", word)
			}
		}
	}
}

// TestStopWordsFile checks stopwords.txt: its rule is written at its
// top, then lower-case words separated by single spaces, none listed
// twice.
func TestStopWordsFile(t *testing.T) {
	assert.Contains(t, stopWordsFile, "# The rule: only generic English function words and question words")
	set, err := parseWordList(stopWordsFile)
	require.NoError(t, err)
	assert.NotEmpty(t, set)
	for n, line := range strings.Split(stopWordsFile, "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			assert.Regexp(t, `^[a-z]+( [a-z]+)*$`, line, "stopwords.txt:%d", n+1)
		}
	}
}

func TestParseVocabularyRejectsMalformedLines(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"remove delete\n", "line 1"},
		{"# a comment\n\nRemove: delete\n", "line 3"},
		{"remove:  delete\n", "line 1"},
		{"remove: delete \n", "line 1"},
		{"remove:\n", "line 1"},
		{"re move: delete\n", "line 1"},
		{"remove: delete\nremove: drop\n", `"remove" is defined twice`},
		{"remove: delete delete\n", `lists "delete" twice`},
		{"remove: remove delete\n", `lists "remove" twice`},
	} {
		_, err := parseVocabulary(tc.text)
		if assert.Error(t, err, "%q", tc.text) {
			assert.Contains(t, err.Error(), tc.want, "%q", tc.text)
		}
	}
	v, err := parseVocabulary("# rule\n\nremove: delete drop\nsha: sha256 hash_sum\n")
	require.NoError(t, err)
	assert.Equal(t, map[string][]string{"remove": {"delete", "drop"}, "sha": {"sha256", "hash_sum"}}, v)
}

func TestParseWordListRejectsMalformedLines(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"a the\nThe\n", "line 2"},
		{"a  the\n", "line 1"},
		{" a\n", "line 1"},
		{"don't\n", "line 1"},
		{"a the\nof a\n", `"a" is listed twice`},
	} {
		_, err := parseWordList(tc.text)
		if assert.Error(t, err, "%q", tc.text) {
			assert.Contains(t, err.Error(), tc.want, "%q", tc.text)
		}
	}
	set, err := parseWordList("# rule\na the\n\nof\n")
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"a": true, "the": true, "of": true}, set)
}

// TestModelReadsTheVocabulary checks that every entry of vocab.txt
// reaches the query: a question of the entry's word searches the stems of
// its code words.
func TestModelReadsTheVocabulary(t *testing.T) {
	v, err := parseVocabulary(vocabularyFile)
	require.NoError(t, err)
	for word, code := range v {
		q := buildQuery(word, extractTerms(word))
		require.Len(t, q, 1, word)
		for _, c := range code {
			assert.Contains(t, q[0].stems, codeStem(c), "%s: %s", word, c)
		}
	}
}

// TestModelReadsTheStopWords checks that every word of stopwords.txt is
// dropped from a task, and that a word not listed is not.
func TestModelReadsTheStopWords(t *testing.T) {
	set, err := parseWordList(stopWordsFile)
	require.NoError(t, err)
	for w := range set {
		assert.Empty(t, ExtractTerms("the "+w), w)
		assert.Empty(t, buildQuery("the "+w, nil), w)
	}
	words := slices.Sorted(maps.Keys(set))
	task := strings.Join(words, " ") + " retries"
	assert.Equal(t, []string{wordStem("retries")}, ExtractTerms(task), fmt.Sprintf("%d stop words and retries", len(words)))
}
