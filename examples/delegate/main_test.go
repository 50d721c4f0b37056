package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/troupe-dev/troupe/manager"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var shop = filepath.Join("..", "..", "testdata", "repos", "shop")

// lines counts the lines of a file of the shop repository.
func lines(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(filepath.Join(shop, filepath.FromSlash(path)))
	require.NoError(t, err, "finding %s names a file of the repository", path)
	defer f.Close()
	n := 0
	for s := bufio.NewScanner(f); s.Scan(); {
		n++
	}
	return n
}

func TestAskGivesEachQuestionFindingsOnDisk(t *testing.T) {
	questions := []string{
		"where is the discount applied?",
		"how are charges retried?",
		"where are refunds issued?",
	}
	wantFile := []string{"cart/cart.go", "payment/charge.go", "payment/refund.go"}

	answers, err := ask(context.Background(), shop, questions)
	require.NoError(t, err)
	require.Len(t, answers, len(questions))
	for i, a := range answers {
		assert.Equal(t, questions[i], a.Question, "answers come in the order asked")
		assert.Equal(t, manager.Completed, a.Result.State, "%s: %s", a.Question, a.Result.Error)
		require.NotEmpty(t, a.Findings, a.Question)
		assert.Equal(t, wantFile[i], a.Findings[0].Path, "the best finding of %q", a.Question)
		for _, f := range a.Findings {
			assert.GreaterOrEqual(t, f.Line, 1)
			assert.LessOrEqual(t, f.Line, lines(t, f.Path), "%s:%d is a line of the file", f.Path, f.Line)
		}
	}
}

func TestPrintAnswersOneSectionPerQuestion(t *testing.T) {
	questions := []string{"where is the discount applied?", "how are charges retried?", "where are refunds issued?"}
	answers, err := ask(context.Background(), shop, questions)
	require.NoError(t, err)
	var out bytes.Buffer
	printAnswers(&out, answers)
	text := out.String()

	at := 0
	for i, q := range questions {
		heading := "## " + string(rune('1'+i)) + ". " + q + "\n"
		next := strings.Index(text[at:], heading)
		require.GreaterOrEqual(t, next, 0, "section %q after the previous one in\n%s", heading, text)
		at += next
	}
	assert.Contains(t, text, "- cart/cart.go:40  func applyDiscount(cents int64, code string) int64\n")
	assert.Contains(t, text, "explore agent 2-how-are-charges-retried: completed (done)")
}

func TestAskRefusesAMissingDirectory(t *testing.T) {
	_, err := ask(context.Background(), filepath.Join(t.TempDir(), "missing"), defaultQuestions)
	assert.Error(t, err)
}

func TestAskRefusesTooManyQuestions(t *testing.T) {
	_, err := ask(context.Background(), shop, make([]string, 9))
	assert.ErrorContains(t, err, "ask 1 to 8 questions")
}

func TestAskCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := ask(ctx, shop, defaultQuestions)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestLabel(t *testing.T) {
	assert.Equal(t, "1-where-is-the-discount-applied", label(0, "Where is the discount applied?"))
	l := label(7, strings.Repeat("word ", 20))
	assert.LessOrEqual(t, len(l), 32)
	assert.True(t, strings.HasPrefix(l, "8-word-word"), l)
	assert.Equal(t, "3", label(2, "¿?"), "a question without ASCII words is named by its number")
}
