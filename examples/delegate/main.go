// Command delegate shows a Go program acting as the parent of a group of
// agents: it asks three questions about a repository, gives each to an
// explore agent, runs them in parallel as one group, waits for the group,
// and prints the findings merged, one section per question.
//
//	go run ./examples/delegate [DIR [QUESTION...]]
//
// DIR defaults to the current directory; questions given after it replace
// the three default ones (at most 8). The agents use the offline retrieval
// model, so the program needs no API key and no network; its findings are
// ranked by term matching, not by understanding the code.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin"
	"github.com/troupe-dev/troupe/builtin/models"
	"github.com/troupe-dev/troupe/builtin/offline"
	"github.com/troupe-dev/troupe/manager"
)

// defaultQuestions suit most Go repositories.
var defaultQuestions = []string{
	"where is the main function?",
	"where are errors defined with errors.New?",
	"where are the tests?",
}

// maxShown is how many findings a question shows.
const maxShown = 5

func main() {
	dir, questions := ".", defaultQuestions
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if len(os.Args) > 2 {
		questions = os.Args[2:]
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	answers, err := ask(ctx, dir, questions)
	if err != nil {
		log.Fatal(err)
	}
	printAnswers(os.Stdout, answers)
}

// answer is one question and what its agent found.
type answer struct {
	Question string
	Label    string
	Result   manager.Result
	Findings []offline.Finding
}

// ask gives each question to an explore agent over dir, runs them as one
// group, at most three at a time, and returns their answers in the order
// of questions.
func ask(ctx context.Context, dir string, questions []string) ([]answer, error) {
	if len(questions) == 0 || len(questions) > agenttypes.MaxDelegateTasks {
		return nil, fmt.Errorf("ask 1 to %d questions, not %d", agenttypes.MaxDelegateTasks, len(questions))
	}
	reg := agenttypes.NewRegistry()
	if err := builtin.Register(reg); err != nil {
		return nil, err
	}
	mgr, err := manager.New(manager.Config{
		Registry:     reg,
		Models:       models.Resolver{},
		DefaultModel: models.Offline,
	})
	if err != nil {
		return nil, err
	}
	// Close waits for every agent, also when ctx was cancelled.
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = mgr.Close(closeCtx)
	}()

	tasks := make([]agenttypes.ChildTask, len(questions))
	for i, q := range questions {
		tasks[i] = agenttypes.ChildTask{Label: label(i, q), Type: "explore", Prompt: q}
	}
	group, err := mgr.SpawnGroup(ctx, manager.GroupRequest{Tasks: tasks, Concurrency: 3, Dir: dir})
	if err != nil {
		return nil, err
	}
	// Results come back in task order, whichever agent finished first.
	results, err := group.Wait(ctx)
	if err != nil {
		group.Cancel()
		return nil, err
	}
	answers := make([]answer, len(questions))
	for i, res := range results {
		answers[i] = answer{Question: questions[i], Label: tasks[i].Label, Result: res}
		if f, ok := res.Data.(builtin.Findings); ok {
			answers[i].Findings = f.Findings
		}
	}
	return answers, nil
}

// label names a question's agent: its number and first words, at most 32
// bytes.
func label(i int, q string) string {
	l := strconv.Itoa(i + 1)
	for _, w := range strings.FieldsFunc(strings.ToLower(q), func(r rune) bool {
		return !('a' <= r && r <= 'z' || '0' <= r && r <= '9')
	}) {
		if len(l)+1+len(w) > 32 {
			break
		}
		l += "-" + w
	}
	return l
}

// printAnswers writes one section per question with its best findings as
// path:line.
func printAnswers(w io.Writer, answers []answer) {
	for i, a := range answers {
		r := a.Result
		fmt.Fprintf(w, "## %d. %s\n\n", i+1, a.Question)
		fmt.Fprintf(w, "%s agent %s: %s (%s), %d tool calls, %s\n\n", r.Type, a.Label, r.State, r.Reason, r.ToolCalls, r.Duration.Round(time.Millisecond))
		if r.Error != "" {
			fmt.Fprintf(w, "error: %s\n\n", r.Error)
		}
		if len(a.Findings) == 0 {
			fmt.Fprintln(w, "No findings.")
		}
		for _, f := range a.Findings[:min(maxShown, len(a.Findings))] {
			text := f.Snippet
			if f.Symbol != "" {
				text = f.Symbol // the definition the finding is
			}
			fmt.Fprintf(w, "- %s:%d  %s\n", f.Path, f.Line, text)
		}
		if more := len(a.Findings) - maxShown; more > 0 {
			fmt.Fprintf(w, "- … %d more\n", more)
		}
		fmt.Fprintln(w)
	}
}
