package offline

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/troupe-dev/troupe/builtin/tools"
)

func TestDefNameOf(t *testing.T) {
	tests := []struct{ path, line, want string }{
		{"a.go", "func (c *Client) Kill() error {", "Kill"},
		{"a.go", "func Parse[T any](s string) T {", "Parse"},
		{"a.go", "type Budget struct {", "Budget"},
		{"a.go", "var ErrX = errors.New(\"x\")", "ErrX"},
		{"a.go", "\tvar n int", ""},
		{"a.go", "\tx := retry(f)", ""},
		{"a.go", "\tif retry(x) {", ""},
		{"a.py", "    def archive(self, note_id):", "archive"},
		{"a.py", "class NoteStore:", "NoteStore"},
		{"a.ts", "export async function withRetry<T>(fn: () => Promise<T>): Promise<T> {", "withRetry"},
		{"a.ts", "export const countWords = (text: string): number =>", "countWords"},
		{"a.ts", "  async autosave(): Promise<void> {", "autosave"},
		{"a.ts", "    await this.client.createNote(title, rest.join(\"\\n\"));", ""},
		{"a.java", "    public List<Note> listRecent(int limit) {", "listRecent"},
		{"a.rs", "pub fn slugify(title: &str) -> String {", "slugify"},
		{"a.c", "static long count_words(FILE *f)", "count_words"},
		{"a.c", "\treturn count_words(f);", ""},
		{"a.sh", "rotate_backups() {", "rotate_backups"},
		{"a.sh", "# rotate_backups() deletes", ""},
		{"a.js", "function debounce(fn, wait) {", "debounce"},
		{"a.js", "export const throttle = (fn, ms) => {", "throttle"},
		{"a.js", "  handleClick(event) {", "handleClick"},
		{"a.js", "    return debounce(fn, 10);", ""},
		{"a.ts", "    const json = _json as JSONSchema.BooleanSchema;", ""},
		{"a.ts", "  let last = 0;", ""},
		{"a.ts", "export const email: RegExp =", "email"},
		{"a.ts", "  const init = (subscriber: Subscriber<never>) => subscriber.error(errorFactory());", ""},
		{"a.ts", "    let startBuffer = () => {", ""},
		{"a.rs", "        let start = self.tokens.substr_offset(s);", ""},
		{"a.rs", "    pub const MAX: usize = 4;", "MAX"},
		{"a.rs", "impl Map<String, Value> {", ""},
		{"a.rs", "impl<'a> fmt::Display for Error<'a> {", ""},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, defNameOf(tt.path, tt.line), "%s: %s", tt.path, tt.line)
	}
}

func TestSpanEnd(t *testing.T) {
	lines := func(src string) map[int]string {
		m := make(map[int]string)
		for i, l := range strings.Split(src, "\n") {
			m[i+1] = l
		}
		return m
	}
	goSrc := "func f() {\n\ts := \"}\"\n\tif x {\n\t}\n}\n\nfunc g() {}\n"
	assert.Equal(t, 5, spanEnd("a.go", lines(goSrc), 1), "a brace in a string is no end")
	assert.Equal(t, 7, spanEnd("a.go", lines(goSrc), 7))
	assert.Equal(t, 1, spanEnd("a.go", lines("type ID string\n\nfunc f() {}\n"), 1))
	pySrc := "class A:\n    def f(self):\n        return (\n    1)\n\n    def g(self):\n        pass\nx = 1\n"
	assert.Equal(t, 4, spanEnd("a.py", lines(pySrc), 2))
	assert.Equal(t, 7, spanEnd("a.py", lines(pySrc), 1))
	tsSrc := "  search(q: string) {\n    return this.request(\"GET\", \"/s?q={\" + q);\n  }\n}\n"
	assert.Equal(t, 3, spanEnd("a.ts", lines(tsSrc), 1))
	rsSrc := "pub fn slugify(title: &str) -> String {\n    let s = \"{\";\n    s.to_string()\n}\n\nfn other() {}\n"
	assert.Equal(t, 4, spanEnd("a.rs", lines(rsSrc), 1), "a brace in a Rust string is no end")
	lifetimes := "fn longest<'a>(x: &'a str, y: &'a str) -> &'a str {\n    if x.len() > y.len() { x } else { y }\n}\nfn next() {}\n"
	assert.Equal(t, 3, spanEnd("a.rs", lines(lifetimes), 1), "a lifetime opens no character literal")
	chars := "fn brace(c: char) -> bool {\n    c == '{' || c == '\\''\n}\n"
	assert.Equal(t, 3, spanEnd("a.rs", lines(chars), 1), "a brace in a character literal is no opening")
	javaSrc := "    public List<Note> listRecent(int limit) {\n        if (limit < 0) {\n            return List.of();\n        }\n        return notes;\n    }\n}\n"
	assert.Equal(t, 6, spanEnd("a.java", lines(javaSrc), 1))
	cSrc := "static long count_words(FILE *f)\n{\n\tint c; /* { */\n\treturn 0;\n}\n"
	assert.Equal(t, 5, spanEnd("a.c", lines(cSrc), 1), "a C body whose brace opens on the next line")
	shSrc := "rotate_backups() {\n  for f in *.bak; do\n    rm \"$f\"\n  done\n}\nmain\n"
	assert.Equal(t, 5, spanEnd("a.sh", lines(shSrc), 1))
	alias := "type MapImpl<K, V> = BTreeMap<K, V>;\n#[cfg(x)]\ntype Other = u8;\n\nimpl Map {\n    fn f() {}\n}\n"
	assert.Equal(t, 1, spanEnd("a.rs", lines(alias), 1), "a declaration ended by its ';' before any body")
	tsAlias := "export type Id = string | number;\n\n\n\nexport class A {\n}\n"
	assert.Equal(t, 1, spanEnd("a.ts", lines(tsAlias), 1), "a type alias ended by its ';'")
	params := "fn f(\n    a: [u8; 4],\n) {\n    a\n}\n"
	assert.Equal(t, 5, spanEnd("a.rs", lines(params), 1), "a ';' inside brackets ends nothing")
}

// TestAKnownOneLineSpanStays checks that a declaration the symbols tool
// gave a one-line span keeps it once read, rather than running on to the
// body of whatever follows it.
func TestAKnownOneLineSpanStays(t *testing.T) {
	lines := map[int]string{
		1: "type MapImpl<K, V> = BTreeMap<K, V>;",
		2: "",
		3: "",
		4: "",
		5: "impl Map {",
		6: "    fn f() {}",
		7: "}",
	}
	c := &cand{path: "a.rs", line: 1, end: 1, name: "MapImpl", kind: "type", spanKnown: true}
	c.readSpan(lines)
	assert.Equal(t, 1, c.end)
	assert.Empty(t, c.body)
}

// TestEvalNotes runs the evaluation questions about testdata/repos/notes,
// a tree small enough for every test run: it is not Go, so the
// definitions come from the light per-language heuristics.
func TestEvalNotes(t *testing.T) {
	var qs []evalQuestion
	for _, q := range loadEval(t) {
		if q.Repo == "testdata/repos/notes" {
			qs = append(qs, q)
		}
	}
	require.NotEmpty(t, qs)
	fig := evaluate(context.Background(), t, qs, evalRankers[0], t.Logf)
	t.Log(fig)
	assert.GreaterOrEqual(t, fig.top5File, 90.0)
	assert.GreaterOrEqual(t, fig.top5Loc, 80.0)
	assert.GreaterOrEqual(t, fig.top1File, 60.0)
}

func TestGoSignature(t *testing.T) {
	lines := map[int]string{
		10: "func (t *Transport) dialConn(ctx context.Context,",
		11: "\tcm connectMethod) (pconn *persistConn, err error) {",
		12: "\treturn nil, nil",
		13: "}",
	}
	assert.Equal(t, "func (t *Transport) dialConn(ctx context.Context, cm connectMethod) (pconn *persistConn, err error)",
		goSignature(lines, 10, 13))
	assert.Empty(t, goSignature(lines, 10, 12), "not a whole function")
}

// Tests, docs and examples come after the implementation unless the
// question asks for them in so many words.
func TestQuestionsAskForTestsDocsAndExamplesInWholeWords(t *testing.T) {
	for _, tc := range []struct {
		q                     string
		tests, docs, examples bool
	}{
		{"where is the latest version checked?", false, false, false},
		{"how does the docker build cache work?", false, false, false},
		{"which tests cover the retry?", true, false, false},
		{"where is spawning documented?", false, true, false},
		{"is there an example of a plugin?", false, false, true},
		{"what does the README say about budgets?", false, true, false},
	} {
		r := newRanker(tc.q, nil)
		assert.Equal(t, tc.tests, r.askTests, tc.q)
		assert.Equal(t, tc.docs, r.askDocs, tc.q)
		assert.Equal(t, tc.examples, r.askExamples, tc.q)
	}
	plain := newRanker("where is the retry done?", nil)
	asked := newRanker("which tests cover the retry?", nil)
	assert.Less(t, plain.pathMult("client/retry_test.go"), plain.pathMult("client/retry.go"), "a test comes after the implementation")
	assert.Equal(t, asked.pathMult("client/retry_test.go"), asked.pathMult("client/retry.go"), "unless the question asks for tests")
	assert.Less(t, plain.pathMult("examples/retry/main.go"), plain.pathMult("client/retry.go"))
	assert.Less(t, plain.pathMult("docs/retry.md"), plain.pathMult("client/retry.go"))
	assert.Less(t, plain.pathMult("client/retry.pb.go"), plain.pathMult("client/retry.go"), "generated code comes after written code")
}

// The package's patterns are compiled on first use; each must compile.
func TestEveryLazyPatternCompiles(t *testing.T) {
	require.GreaterOrEqual(t, len(lazyPatterns), 25)
	for _, l := range lazyPatterns {
		assert.NotPanics(t, func() { l.get() }, l.pattern)
	}
}

// A file whose name is all that matches the question is still found:
// when grep finds no line, the files glob found are the candidates, read
// from the top, and the finding is the first line that is not blank.
func TestFileFoundByNameOnly(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "notes"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes", "frobnicator.txt"), []byte("\n\nthe first words\nmore words\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "other.go"), []byte("package other\n"), 0o644))

	r := converseUsing(t, New(), "where is the frobnicator?", allTools, realTools(dir))
	require.Len(t, r.choices, 3, "search, read, answer")
	reads := r.choices[1].ToolCalls
	require.Len(t, reads, 1)
	assert.JSONEq(t, `{"path":"notes/frobnicator.txt","offset":1,"limit":20}`, reads[0].FunctionCall.Arguments)
	findings := ParseFindings(r.final().Content)
	require.Len(t, findings, 1, r.final().Content)
	assert.Equal(t, Finding{Path: "notes/frobnicator.txt", Line: 3, EndLine: 3, Snippet: "the first words", Relevance: 1}, findings[0])
}

// TestAVocabularyWordCountsLessThanTheQuestionsOwn: a word the
// vocabulary gives for a concept is a guess at what the code calls it,
// so a line holding it counts less than one holding the question's own
// word, and a definition named with it ranks after one named with the
// question's word.
func TestAVocabularyWordCountsLessThanTheQuestionsOwn(t *testing.T) {
	task := "where is the limit enforced?"
	r := newRanker(task, extractTerms(task))
	var enforce qword
	for _, w := range r.q {
		if w.text == "enforced" {
			enforce = w
		}
	}
	require.NotEmpty(t, enforce.stems, "the concept of %q", task)
	require.Greater(t, len(enforce.stems), 1, "the vocabulary gives enforce a word")
	own, guess := wordsOf("func enforceLimit()").count(enforce), wordsOf("func checkLimit()").count(enforce)
	assert.Equal(t, 1.0, own)
	assert.Equal(t, vocabWeight, guess)
	r.computeIDF(nil, tools.SymbolCounts{})
	byOwn := r.scoreCand(&cand{path: "a.go", line: 1, name: "enforceLimit", signature: "func enforceLimit()"})
	byGuess := r.scoreCand(&cand{path: "b.go", line: 1, name: "checkLimit", signature: "func checkLimit()"})
	assert.Greater(t, byOwn, byGuess)
}

const longDocGo = `package feed

// Replay sends every value kept so far to a subscriber that joins late,
// the oldest first.
//
// It holds the lock while it copies the buffer, and sends outside it, so
// that a slow reader does not hold up the writers. A reader that returns
// an error stops the copy; what it was not sent stays in the buffer for
// the next call. The buffer is a ring: once full, the oldest entry goes
// to make room. Its size is fixed when the feed is made, and a size of
// zero keeps nothing at all, which makes this call do nothing. Tests use
// a fake clock to check the order. The order is the order of arrival,
// not the order of the timestamps, which a clock that goes back in time
// would break. See New for the options, and Close for what happens to
// a reader that is still being sent to when the feed closes.
func (f *Feed) Replay(r Reader) error {
	f.mu.Lock()
	buf := append([]Item(nil), f.buf...)
	f.mu.Unlock()
	for _, it := range buf {
		if err := r.Read(it); err != nil {
			return err
		}
	}
	return nil
}

// Join adds a reader.
func (f *Feed) Join(r Reader) {
	f.mu.Lock()
	defer f.mu.Unlock()
	// a late subscriber gets a value
	f.readers = append(f.readers, r)
}
`

// TestALongDocCommentKeepsItsFirstSentence: the read of a definition
// starts a few lines above it, inside a long doc comment; the comment's
// first sentence, which says most and which the symbols tool gave, still
// counts once the definition is read.
func TestALongDocCommentKeepsItsFirstSentence(t *testing.T) {
	fs := askTree(t, map[string]string{"feed.go": longDocGo}, "how does a subscriber that joins late get every value kept so far?")
	assert.Contains(t, fs[0].Symbol, "Replay", "%+v", fs)
}

// askTree runs the model with the real read, grep, glob and symbols
// tools on a tree of files, as the explore type does.
func askTree(t *testing.T, files map[string]string, question string) []Finding {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644))
	}
	fs, err := runModel(context.Background(), evalQuestion{ID: "t", Question: question}, dir)
	require.NoError(t, err)
	require.NotEmpty(t, fs)
	return fs
}

const overloadsTS = `/** Shares one subscription to the source among many subscribers. */
export function share<T>(): MonoTypeOperatorFunction<T>;
/** Shares one subscription, with a subject made by the factory. */
export function share<T>(options: ShareConfig<T>): MonoTypeOperatorFunction<T>;

export function share<T>(options: ShareConfig<T> = {}): MonoTypeOperatorFunction<T> {
  const { connector = () => new Subject<T>(), resetOnError = true } = options;
  let connection: Subscriber<T> | null = null;
  let refCount = 0;
  return (source) => {
    refCount++;
    return connector();
  };
}

export function count(): number {
  return 0;
}
`

// TestOverloadSignaturesAreOneFindingWithTheirImplementation: the
// overload signatures of a TypeScript function and its implementation
// are one definition, found at the implementation, whose findings are
// not repeated for each signature.
func TestOverloadSignaturesAreOneFindingWithTheirImplementation(t *testing.T) {
	fs := askTree(t, map[string]string{"share.ts": overloadsTS}, "how is one subscription to the source shared among many subscribers?")
	require.NotEmpty(t, fs)
	assert.Equal(t, 6, fs[0].Line, "the implementation: %+v", fs)
	for _, f := range fs[1:] {
		assert.NotContains(t, f.Symbol, "share", "one finding for share: %+v", fs)
	}
}

const composerPy = `class Composer:
    def compose_node(self, event):
        anchor = event.anchor
        if anchor not in self.anchors:
            raise ComposerError("found undefined alias %r" % anchor)
        return self.anchors[anchor]


def alias_text(alias):
    """The alias as text."""
    return str(alias)
`

// TestAnErrorMessageSaysWhatFailed: the words of a string literal count
// on a line that raises an error, whose message says what failed in
// the words a question uses; elsewhere a string is data.
func TestAnErrorMessageSaysWhatFailed(t *testing.T) {
	fs := askTree(t, map[string]string{"composer.py": composerPy}, "where does it fail on an undefined alias?")
	assert.Contains(t, fs[0].Symbol, "compose_node", "%+v", fs)
	assert.Equal(t, 1.0, wordsOf(`raise ComposerError("found undefined alias")`).count(qword{stems: []string{codeStem("undefined")}}))
	assert.Zero(t, wordsOf(`names = ["undefined", "alias"]`).count(qword{stems: []string{codeStem("undefined")}}))
}

// forEachProjectLine calls fn with every line of the project's test
// data, of this package and of the manager's, as strings.Lines gives it.
func forEachProjectLine(t *testing.T, fn func(path, line string)) {
	t.Helper()
	for _, root := range []string{"../../testdata", ".", "../../manager"} {
		err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for line := range strings.Lines(string(data)) {
				fn(p, line)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// A definition pattern's needs only skip lines it cannot match: over
// every line of the project's test data and of two of its packages,
// defName says what the patterns alone say.
func TestDefinitionNeedsSkipOnlyLinesThatCannotMatch(t *testing.T) {
	patternsAlone := func(text string) string {
		for _, d := range defNames {
			if name := d.name(text); name != "" {
				return name
			}
		}
		return ""
	}
	lines, found := 0, 0
	forEachProjectLine(t, func(p, line string) {
		lines++
		want := patternsAlone(line)
		if want != "" {
			found++
		}
		if got := defName(line); got != want {
			t.Fatalf("%s: defName(%q) = %q, the patterns alone say %q", p, line, got, want)
		}
	})
	if lines < 1000 || found < 50 {
		t.Fatalf("read %d lines, %d definitions: too few to test anything", lines, found)
	}
}
