package offline

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"go/build"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/tools"
)

// The evaluation set of the offline model: questions a newcomer would ask
// about code that is readable offline (the Go standard library, troupe
// itself and testdata/repos/notes, a small tree in Python, TypeScript,
// shell, C and Rust), each with the file and line ranges that answer it.
// See testdata/eval/README.md.
const evalFile = "../../testdata/eval/offline.jsonl"

// heldOutFile holds questions written after the model was tuned, over
// packages the tuning never looked at; they are only measured.
const heldOutFile = "../../testdata/eval/heldout.jsonl"

// testSetFile holds the test set: questions over code the model was
// never tuned on (large standard library packages and pinned Python,
// TypeScript and Rust packages), written from reading that code. Its
// figures are reported, never its misses.
const testSetFile = "../../testdata/eval/test.jsonl"

// testSetSHA256 is the SHA-256 of testSetFile as it was committed, before
// anything scored it. The set is frozen, so that tuning the model cannot
// drift it towards what the model already answers.
const testSetSHA256 = "ec86688483a7930524ab28c922dda796fc66e1df178a58624aa2059f7bc9de43"

// checkFrozen returns an error unless the file at path has the SHA-256
// want.
func checkFrozen(path, want string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != want {
		return fmt.Errorf("the test set changed; it is frozen so tuning cannot drift it — %s has SHA-256 %s, want %s: "+
			"restore it with git checkout -- testdata/eval/test.jsonl; a new test set is a new file, committed on its own before anything scores it, with its hash in testSetSHA256",
			path, got, want)
	}
	return nil
}

type evalQuestion struct {
	ID       string `json:"id"`
	Repo     string `json:"repo"`  // "go:<dir under GOROOT/src>", "troupe" or a path from the module root
	Words    string `json:"words"` // "code": the code's own words; "own": other words
	Question string `json:"question"`
	Accept   []struct {
		Path  string `json:"path"`
		Start int    `json:"start"`
		End   int    `json:"end"`
		Def   string `json:"def"` // a string the start line holds
	} `json:"accept"`
}

func loadEval(t testing.TB) []evalQuestion { return loadQuestions(t, evalFile) }

func loadQuestions(t testing.TB, evalFile string) []evalQuestion {
	t.Helper()
	f, err := os.Open(evalFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var qs []evalQuestion
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var q evalQuestion
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&q); err != nil {
			t.Fatalf("%s:%d: %v", evalFile, n, err)
		}
		if q.Repo == "troupe" {
			followDefs(&q)
		}
		qs = append(qs, q)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return qs
}

// followDefs moves each range of a question over troupe's own code to the
// line nearest its recorded start that holds its def, keeping its length:
// troupe changes with every commit, and a range is meant to name a
// definition, not a line number. A def found nowhere is left for
// TestEvalSet to report.
func followDefs(q *evalQuestion) {
	for i := range q.Accept {
		a := &q.Accept[i]
		data, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(a.Path)))
		if err != nil {
			return
		}
		lines := strings.Split(string(data), "\n")
		best := -1
		for n, line := range lines {
			if strings.Contains(line, a.Def) && (best < 0 || abs(n+1-a.Start) < abs(best+1-a.Start)) {
				best = n
			}
		}
		if best >= 0 {
			delta := best + 1 - a.Start
			a.Start += delta
			a.End += delta
		}
	}
}

func abs(n int) int { return max(n, -n) }

// evalRoot is the directory a question's repo names, or "" when it is not
// on this machine (a Go installation without sources, a package not
// fetched into the cache).
func evalRoot(repo string) string {
	var dir string
	switch {
	case strings.HasPrefix(repo, "go:"):
		dir = filepath.Join(build.Default.GOROOT, "src", filepath.FromSlash(strings.TrimPrefix(repo, "go:")))
	case isPackagedTree(repo):
		dir = packagedTreeDir(repo)
	case repo == "troupe":
		dir = filepath.Join("..", "..")
	default:
		dir = filepath.Join("..", "..", filepath.FromSlash(repo))
	}
	if dir == "" {
		return ""
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return ""
	}
	return dir
}

// isPackagedTree reports whether repo names a tree unpacked from a
// package: "npm:<name>@<version>/<subdir>" or
// "deb:<package>=<version>/<subdir>".
func isPackagedTree(repo string) bool {
	return strings.HasPrefix(repo, "npm:") || strings.HasPrefix(repo, "deb:")
}

// evalCacheDir is where testdata/eval/fetch-trees.sh unpacks packaged
// trees: $TROUPE_EVAL_CACHE, as make eval sets it, or troupe-eval in the
// user's cache directory, make eval's default too.
func evalCacheDir() string {
	if dir := os.Getenv("TROUPE_EVAL_CACHE"); dir != "" {
		return dir
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "troupe-eval")
}

// packagedTreeDir is where a packaged tree's repo lives in the cache:
// <cache>/npm/<name>@<version>/<subdir> or
// <cache>/deb/<package>=<version>/<subdir>; "" for a malformed repo.
func packagedTreeDir(repo string) string {
	kind, rest, _ := strings.Cut(repo, ":")
	n := 1
	if kind == "npm" && strings.HasPrefix(rest, "@") {
		n = 2 // a scoped name: @scope/name@version
	}
	parts := strings.SplitN(rest, "/", n+1)
	if len(parts) <= n || parts[n] == "" || strings.Contains(parts[n], "..") {
		return ""
	}
	cache := evalCacheDir()
	if cache == "" {
		return ""
	}
	return filepath.Join(cache, kind, filepath.FromSlash(strings.Join(parts[:n], "/")), filepath.FromSlash(parts[n]))
}

func TestPackagedTreeDir(t *testing.T) {
	t.Setenv("TROUPE_EVAL_CACHE", "/cache")
	tests := []struct{ repo, want string }{
		{"npm:left-pad@1.3.0/lib", "/cache/npm/left-pad@1.3.0/lib"},
		{"npm:@scope/pkg@2.0.1/src/core", "/cache/npm/@scope/pkg@2.0.1/src/core"},
		{"deb:python3-requests=2.28.1+dfsg-1/usr/lib/python3/dist-packages/requests",
			"/cache/deb/python3-requests=2.28.1+dfsg-1/usr/lib/python3/dist-packages/requests"},
		{"npm:left-pad@1.3.0", ""},             // no subdirectory
		{"npm:@scope/pkg@2.0.1", ""},           // no subdirectory
		{"deb:pkg=1.0/../../etc", ""},          // out of the cache
		{"npm:@scope/pkg@2.0.1/src/../..", ""}, // out of the cache
	}
	for _, tt := range tests {
		if got := packagedTreeDir(tt.repo); got != filepath.FromSlash(tt.want) {
			t.Errorf("packagedTreeDir(%q) = %q, want %q", tt.repo, got, tt.want)
		}
	}
}

// missingTreeHint says why a question's tree is not there and how to get it.
func missingTreeHint(repo string) string {
	if isPackagedTree(repo) {
		return fmt.Sprintf("its tree is not in %s; run make eval, or testdata/eval/fetch-trees.sh %s, to fetch it", evalCacheDir(), evalCacheDir())
	}
	return "its tree is not on this machine"
}

// TestEvalSet checks the evaluation set itself: enough questions, half
// of them in words other than the code's, a tree that is not Go, and
// every acceptable range inside its file, starting at the line it names.
func TestEvalSet(t *testing.T) {
	qs := loadEval(t)
	checkQuestions(t, append(slices.Clone(qs), loadQuestions(t, heldOutFile)...))
	if len(qs) < 60 {
		t.Errorf("%d questions, want at least 60", len(qs))
	}
	own, nonGo := 0, 0
	for _, q := range qs {
		if q.Words == "own" {
			own++
		}
		for _, a := range q.Accept {
			if !strings.HasSuffix(a.Path, ".go") {
				nonGo++
			}
		}
	}
	if 2*own < len(qs) {
		t.Errorf("%d of %d questions use words other than the code's, want at least half", own, len(qs))
	}
	if nonGo == 0 {
		t.Error("no question is answered by a file that is not Go")
	}
}

func TestEvalTestSetIsFrozen(t *testing.T) {
	if err := checkFrozen(testSetFile, testSetSHA256); err != nil {
		t.Fatal(err)
	}
	// A change of one byte is caught.
	data, err := os.ReadFile(testSetFile)
	if err != nil {
		t.Fatal(err)
	}
	changed := filepath.Join(t.TempDir(), "test.jsonl")
	if err := os.WriteFile(changed, append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkFrozen(changed, testSetSHA256); err == nil || !strings.Contains(err.Error(), "the test set changed") {
		t.Errorf("a changed test set: err = %v, want it to say the test set changed", err)
	}
}

// TestEvalTestSet checks the test set: at least 80 questions over at least
// six trees in at least three languages, most in words other than the
// code's, no id shared with the tuned or held-out questions, and every
// acceptable range of a tree on this machine starting at the line it names.
func TestEvalTestSet(t *testing.T) {
	qs := loadQuestions(t, testSetFile)
	all := append(append(slices.Clone(qs), loadEval(t)...), loadQuestions(t, heldOutFile)...)
	checkQuestions(t, all)
	if len(qs) < 80 {
		t.Errorf("%d questions, want at least 80", len(qs))
	}
	own := 0
	repos := make(map[string]bool)
	langs := make(map[string]bool)
	for _, q := range qs {
		if q.Words == "own" {
			own++
		}
		repos[q.Repo] = true
		for _, a := range q.Accept {
			langs[filepath.Ext(a.Path)] = true
		}
	}
	if 2*own <= len(qs) {
		t.Errorf("%d of %d questions use words other than the code's, want most", own, len(qs))
	}
	if len(repos) < 6 {
		t.Errorf("%d trees, want at least 6", len(repos))
	}
	if len(langs) < 3 {
		t.Errorf("answers in %d languages (%v), want at least 3", len(langs), langs)
	}
}

// checkQuestions checks each question: a unique id, words, and every
// acceptable range inside its file, starting at the line it names.
func checkQuestions(t *testing.T, qs []evalQuestion) {
	t.Helper()
	ids := make(map[string]bool)
	skipped := make(map[string]bool)
	for _, q := range qs {
		if ids[q.ID] {
			t.Errorf("%s: duplicate id", q.ID)
		}
		ids[q.ID] = true
		switch q.Words {
		case "own", "code":
		default:
			t.Errorf("%s: words is %q, want code or own", q.ID, q.Words)
		}
		if q.Question == "" || len(q.Accept) == 0 {
			t.Errorf("%s: no question or no acceptable range", q.ID)
		}
		root := evalRoot(q.Repo)
		if root == "" {
			if strings.HasPrefix(q.Repo, "go:") || isPackagedTree(q.Repo) {
				if !skipped[q.Repo] {
					t.Logf("skipping the questions over %s: %s", q.Repo, missingTreeHint(q.Repo))
					skipped[q.Repo] = true
				}
				continue
			}
			t.Errorf("%s: repo %s not found", q.ID, q.Repo)
			continue
		}
		for _, a := range q.Accept {
			data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(a.Path)))
			if err != nil {
				t.Errorf("%s: %v", q.ID, err)
				continue
			}
			lines := strings.Split(string(data), "\n")
			if a.Start < 1 || a.End < a.Start || a.End > len(lines) {
				t.Errorf("%s: %s:%d-%d is not inside the file's %d lines", q.ID, a.Path, a.Start, a.End, len(lines))
				continue
			}
			if !strings.Contains(lines[a.Start-1], a.Def) {
				t.Errorf("%s: %s:%d is %q, want it to hold %q", q.ID, a.Path, a.Start, lines[a.Start-1], a.Def)
			}
		}
	}
}

// evalResult is how a ranker did on one question.
type evalResult struct {
	top1File, top5File, top5Loc bool
	took                        time.Duration
	findings                    []Finding
}

// evalRanker answers a question over the tree at root with ranked
// findings.
type evalRanker struct {
	name string
	rank func(ctx context.Context, q evalQuestion, root string) ([]Finding, error)
}

// evalRankers are the rankers make eval compares: the offline model as
// it is, the same model with its vocabulary emptied, a plain BM25
// ranking of declarations (bm25_test.go), and the symbols tool alone.
var evalRankers = []evalRanker{
	{"model", runModel},
	{"model, no vocabulary", func(ctx context.Context, q evalQuestion, root string) (fs []Finding, err error) {
		withoutVocabulary(func() { fs, err = runModel(ctx, q, root) })
		return fs, err
	}},
	{"BM25 baseline", func(_ context.Context, q evalQuestion, root string) ([]Finding, error) {
		return bm25Rank(root, q.Question, 10)
	}},
	{"symbols tool", runSymbols},
}

// runSymbols asks the symbols tool alone, with the question as its
// query, as an agent might: its ranking of the tree's declarations by
// name, doc comment and body.
func runSymbols(ctx context.Context, q evalQuestion, root string) ([]Finding, error) {
	ctx = agenttypes.WithEnv(ctx, &agenttypes.Env{Dir: root, Note: func(string) {}})
	args, err := json.Marshal(map[string]any{"query": q.Question, "max_results": 10})
	if err != nil {
		return nil, err
	}
	out, err := tools.Symbols().Call(ctx, args)
	if err != nil {
		return nil, err
	}
	_, syms := tools.ParseSymbols(out)
	var fs []Finding
	for _, s := range syms {
		fs = append(fs, Finding{Path: s.Path, Line: s.Line, EndLine: s.End, Symbol: s.Name})
	}
	return fs, nil
}

// withoutVocabulary runs fn with the model's vocabulary emptied: every
// word of a question then stands for itself and its stem only. Not safe
// while another search runs.
func withoutVocabulary(fn func()) {
	saved := vocabByStem
	vocabByStem = func() map[string][]string { return nil }
	defer func() { vocabByStem = saved }()
	fn()
}

func TestWithoutVocabulary(t *testing.T) {
	stems := func() []string {
		q := buildQuery("guess", extractTerms("guess"))
		if len(q) != 1 {
			t.Fatalf("buildQuery(guess) = %v, want one word", q)
		}
		return q[0].stems
	}
	if !slices.Contains(stems(), codeStem("detect")) {
		t.Fatal("with the vocabulary, guess does not stand for detect")
	}
	withoutVocabulary(func() {
		if got := stems(); !slices.Equal(got, []string{codeStem("guess")}) {
			t.Errorf("without the vocabulary, guess stands for %v, want only its stem", got)
		}
	})
	if !slices.Contains(stems(), codeStem("detect")) {
		t.Error("the vocabulary is not back after withoutVocabulary")
	}
}

// runModel runs the model on q the way the manager does, with troupe's
// real read, grep, glob and symbols tools on the question's repository,
// as the builtin explore type offers them.
func runModel(ctx context.Context, q evalQuestion, root string) ([]Finding, error) {
	ctx = agenttypes.WithEnv(ctx, &agenttypes.Env{Dir: root, Note: func(string) {}})
	byName := make(map[string]agenttypes.Tool)
	var offered []llms.Tool
	for _, tl := range []agenttypes.Tool{tools.Read(), tools.Grep(), tools.Glob(), tools.Symbols()} {
		s := tl.Spec()
		byName[s.Name] = tl
		offered = append(offered, llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
			Name: s.Name, Description: s.Description, Parameters: s.Parameters,
		}})
	}
	msgs := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "You explore a repository and report findings with file:line references."),
		llms.TextParts(llms.ChatMessageTypeHuman, q.Question),
	}
	m := New()
	for turn := 0; turn < 8; turn++ {
		resp, err := m.GenerateContent(ctx, msgs, llms.WithTools(offered))
		if err != nil {
			return nil, err
		}
		c := resp.Choices[0]
		if len(c.ToolCalls) == 0 {
			return ParseFindings(c.Content), nil
		}
		ai := llms.MessageContent{Role: llms.ChatMessageTypeAI}
		if c.Content != "" {
			ai.Parts = append(ai.Parts, llms.TextPart(c.Content))
		}
		for _, call := range c.ToolCalls {
			ai.Parts = append(ai.Parts, call)
		}
		msgs = append(msgs, ai)
		for _, call := range c.ToolCalls {
			out := "error: no such tool"
			if tl := byName[call.FunctionCall.Name]; tl != nil {
				text, err := tl.Call(ctx, json.RawMessage(call.FunctionCall.Arguments))
				if err != nil {
					text = "error: " + err.Error()
				}
				out = text
			}
			msgs = append(msgs, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
				llms.ToolCallResponse{ToolCallID: call.ID, Name: call.FunctionCall.Name, Content: out},
			}})
		}
	}
	return nil, fmt.Errorf("%s: no answer after 8 turns", q.ID)
}

// Where a finding must be to locate an answer: its span, when at most
// maxLocSpan lines, overlaps an acceptable range, or its first line is
// within locSlack lines of one.
const (
	maxLocSpan = 120
	locSlack   = 5
)

// score marks the result: top-1 and top-5 by file, and top-5 by location
// (see maxLocSpan).
func (r *evalResult) score(q evalQuestion) {
	for i, f := range r.findings {
		if i == 5 {
			break
		}
		for _, a := range q.Accept {
			if f.Path != a.Path {
				continue
			}
			if i == 0 {
				r.top1File = true
			}
			r.top5File = true
			if locates(f, a.Start, a.End) {
				r.top5Loc = true
			}
		}
	}
}

// locates reports whether finding f locates the range start-end of its
// file.
func locates(f Finding, start, end int) bool {
	last := max(f.EndLine, f.Line)
	if last-f.Line+1 <= maxLocSpan && f.Line <= end && last >= start {
		return true
	}
	return f.Line >= start-locSlack && f.Line <= end+locSlack
}

func TestLocates(t *testing.T) {
	tests := []struct {
		name      string
		line, end int
		want      bool
	}{
		{"inside", 110, 120, true},
		{"one line at the start", 100, 100, true},
		{"overlapping the end", 140, 200, true},
		{"five lines above", 95, 95, true},
		{"six lines above", 94, 94, false},
		{"five lines below", 155, 0, true},
		{"six lines below", 156, 0, false},
		{"a span of 120 lines around it", 60, 179, true},
		{"a span of 121 lines around it", 60, 180, false},
		{"a long span starting within 5 lines", 97, 400, true},
		{"before it, near but not within 5", 80, 93, false},
	}
	for _, tt := range tests {
		f := Finding{Path: "a.go", Line: tt.line, EndLine: tt.end}
		if got := locates(f, 100, 150); got != tt.want {
			t.Errorf("%s: locates(%d-%d, 100-150) = %v, want %v", tt.name, tt.line, tt.end, got, tt.want)
		}
	}
}

// evalFigures are the scores of a ranker over a set of questions.
type evalFigures struct {
	n                           int
	top1File, top5File, top5Loc float64 // percentages
	median, slowest             time.Duration
	// groups are the same figures for each evalGroup of the questions.
	groups map[string]evalFigures
}

func (f evalFigures) String() string {
	return fmt.Sprintf("%d questions: top-1 file %.0f %%, top-5 file %.0f %%, top-5 location %.0f %%, median %v, slowest %v",
		f.n, f.top1File, f.top5File, f.top5Loc, f.median.Round(100*time.Microsecond), f.slowest.Round(time.Millisecond))
}

// evalGroup names the part of a set a question belongs to, so that a
// set's figures can be read language by language: a packaged tree's
// question goes by its answer's language, the others (Go's standard
// library, troupe, the made-up notes tree) stay together.
func evalGroup(q evalQuestion) string {
	if !isPackagedTree(q.Repo) {
		return "Go, troupe, notes"
	}
	switch filepath.Ext(q.Accept[0].Path) {
	case ".py":
		return "Python"
	case ".ts", ".tsx", ".js":
		return "TypeScript"
	case ".rs":
		return "Rust"
	}
	return "other packages"
}

// figuresOf sums the results of some questions into figures.
func figuresOf(results []evalResult) evalFigures {
	fig := evalFigures{n: len(results)}
	if fig.n == 0 {
		return fig
	}
	var times []time.Duration
	var t1, t5, l5 int
	for _, res := range results {
		times = append(times, res.took)
		if res.top1File {
			t1++
		}
		if res.top5File {
			t5++
		}
		if res.top5Loc {
			l5++
		}
	}
	slices.Sort(times)
	fig.median, fig.slowest = times[len(times)/2], times[len(times)-1]
	pct := func(k int) float64 { return 100 * float64(k) / float64(fig.n) }
	fig.top1File, fig.top5File, fig.top5Loc = pct(t1), pct(t5), pct(l5)
	return fig
}

// evaluate ranks the questions whose repository is on this machine;
// logf, when set, hears about each question that missed.
func evaluate(ctx context.Context, t testing.TB, qs []evalQuestion, r evalRanker, logf func(string, ...any)) evalFigures {
	t.Helper()
	var all []evalResult
	byGroup := make(map[string][]evalResult)
	skipped := make(map[string]bool)
	for _, q := range qs {
		root := evalRoot(q.Repo)
		if root == "" {
			if !skipped[q.Repo] {
				fmt.Fprintf(os.Stderr, "skipping the questions over %s: %s\n", q.Repo, missingTreeHint(q.Repo))
				skipped[q.Repo] = true
			}
			continue
		}
		start := time.Now()
		findings, err := r.rank(ctx, q, root)
		if err != nil {
			t.Fatalf("%s: %s: %v", r.name, q.ID, err)
		}
		res := evalResult{took: time.Since(start), findings: findings}
		res.score(q)
		all = append(all, res)
		byGroup[evalGroup(q)] = append(byGroup[evalGroup(q)], res)
		if logf != nil && (!res.top1File || !res.top5Loc) {
			logMiss(logf, q, res)
		}
	}
	fig := figuresOf(all)
	fig.groups = make(map[string]evalFigures, len(byGroup))
	for g, rs := range byGroup {
		fig.groups[g] = figuresOf(rs)
	}
	return fig
}

func logMiss(logf func(string, ...any), q evalQuestion, res evalResult) {
	var got []string
	for i, f := range res.findings {
		if i == 5 {
			break
		}
		got = append(got, fmt.Sprintf("%s:%d-%d %s", f.Path, f.Line, f.EndLine, f.Symbol))
	}
	logf("miss %s (top1 %v, top5 file %v, top5 location %v) %q\n\tgot %s\n\twant %s:%d", q.ID, res.top1File, res.top5File, res.top5Loc,
		q.Question, strings.Join(got, "\n\t    "), q.Accept[0].Path, q.Accept[0].Start)
}

// evalSet is a set of questions make eval scores, and whether its misses
// may be listed: never the test set's, so that nobody tunes to it.
type evalSet struct {
	name       string
	file       string
	showMisses bool
}

var evalSets = []evalSet{
	{"tuned", evalFile, true},
	{"held out", heldOutFile, true},
	{"test", testSetFile, false},
}

// BenchmarkOfflineEval scores each ranker on each set (`make eval`) and
// prints the figures as one table. Set TROUPE_EVAL_VERBOSE=1 to see the
// model's misses on the tuned and held-out sets; the test set's are never
// shown.
func BenchmarkOfflineEval(b *testing.B) {
	if err := checkFrozen(testSetFile, testSetSHA256); err != nil {
		b.Fatal(err)
	}
	verbose := os.Getenv("TROUPE_EVAL_VERBOSE") != ""
	type row struct {
		set, ranker string
		showGroups  bool
		fig         evalFigures
	}
	rows := make([]row, 0, len(evalSets)*len(evalRankers))
	for _, set := range evalSets {
		qs := loadQuestions(b, set.file)
		for _, r := range evalRankers {
			rows = append(rows, row{set: set.name, ranker: r.name, showGroups: set.showMisses})
			i := len(rows) - 1
			var logf func(string, ...any)
			if verbose && set.showMisses && r.name == "model" {
				// Not b.Logf, which keeps only the first lines of a benchmark's log.
				logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
			}
			b.Run(benchName(set.name)+"/"+benchName(r.name), func(b *testing.B) {
				var fig evalFigures
				for b.Loop() {
					fig = evaluate(context.Background(), b, qs, r, logf)
					logf = nil
				}
				b.ReportMetric(fig.top1File, "top1-file-%")
				b.ReportMetric(fig.top5File, "top5-file-%")
				b.ReportMetric(fig.top5Loc, "top5-loc-%")
				b.ReportMetric(float64(fig.median.Microseconds())/1000, "median-ms")
				rows[i].fig = fig
			})
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "\n| set | ranker | questions | top-1 file | top-5 file | top-5 location | median ms |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&out, "| %s | %s | %d | %.0f %% | %.0f %% | %.0f %% | %.1f |\n", r.set, r.ranker, r.fig.n,
			r.fig.top1File, r.fig.top5File, r.fig.top5Loc, float64(r.fig.median.Microseconds())/1000)
	}
	// The tuned and held-out sets' figures language by language; never
	// the test set's, whose finer figures would say where it misses.
	var groupRows strings.Builder
	for _, r := range rows {
		if !r.showGroups || len(r.fig.groups) < 2 {
			continue
		}
		for _, g := range slices.Sorted(maps.Keys(r.fig.groups)) {
			f := r.fig.groups[g]
			fmt.Fprintf(&groupRows, "| %s | %s | %s | %d | %.0f %% | %.0f %% | %.0f %% | %.1f |\n", r.set, g, r.ranker, f.n,
				f.top1File, f.top5File, f.top5Loc, float64(f.median.Microseconds())/1000)
		}
	}
	if groupRows.Len() > 0 {
		fmt.Fprintf(&out, "\n| set | questions over | ranker | questions | top-1 file | top-5 file | top-5 location | median ms |\n|---|---|---|---|---|---|---|---|\n%s", groupRows.String())
	}
	fmt.Fprint(os.Stderr, out.String())
}

// benchName is name as a sub-benchmark's name: no spaces or commas.
func benchName(name string) string {
	return strings.NewReplacer(" ", "-", ",", "").Replace(name)
}
