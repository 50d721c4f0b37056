package offline

import (
	"fmt"
	"strconv"
	"strings"
)

// Disclaimer is the first line of every final answer of the offline model.
const Disclaimer = "This is troupe's offline retrieval model, not a language model: " +
	"the findings below are ranked by term matching, not by understanding the code. " +
	"For real answers configure a model with `--model provider:model` or the `TROUPE_MODEL` environment variable."

const findingsHeading = "## Findings"

// answer is the final answer before rendering.
type answer struct {
	searched    []string // terms searched for
	findings    []scored
	suggestions []string // other terms to try when nothing matched
	noTerms     bool     // the task held no usable search terms
	// refused is the delegate tool's error when a split into subtasks was
	// refused and the model searched the whole task itself.
	refused string
}

// render writes the answer with the first n findings; omitted findings
// are mentioned when note is true.
func (a answer) render(n int, note bool) string {
	var b strings.Builder
	b.WriteString(Disclaimer)
	b.WriteString("\n")
	if a.refused != "" {
		b.WriteString("\nSplitting the task into subtasks was refused (")
		b.WriteString(truncate(strings.TrimPrefix(a.refused, "error: "), 200))
		b.WriteString("), so it was searched as one task.\n")
	}
	if a.noTerms {
		b.WriteString("\nNo search terms were found in the task. Ask about a specific identifier, " +
			"file name or quoted string, for example: where is `parseConfig` defined?\n")
		return b.String()
	}
	if len(a.searched) > 0 {
		b.WriteString("\nSearched for ")
		b.WriteString(codeList(a.searched))
		b.WriteString(".\n")
	}
	b.WriteString("\n" + findingsHeading + "\n\n")
	if len(a.findings) == 0 {
		b.WriteString("No matches. Try a distinctive identifier, an exact error message in quotes, or part of a file name")
		if len(a.suggestions) > 0 {
			b.WriteString("; for example ")
			b.WriteString(codeList(a.suggestions))
		}
		b.WriteString(".\n")
		return b.String()
	}
	for i, f := range a.findings[:n] {
		fmt.Fprintf(&b, "%d. %s", i+1, codeSpan(spanText(f.Path, f.Line, f.EndLine)))
		if f.Symbol != "" {
			b.WriteString(" in ")
			b.WriteString(codeSpan(f.Symbol))
		}
		if f.Snippet != "" {
			b.WriteString(" — ")
			b.WriteString(codeSpan(f.Snippet))
		}
		fmt.Fprintf(&b, " (relevance %.2f)\n", f.Relevance)
	}
	writeByFile(&b, a.findings[:n])
	if omitted := len(a.findings) - n; omitted > 0 && note {
		fmt.Fprintf(&b, "\n_%d more %s omitted to fit the token limit._\n", omitted, plural(omitted, "finding", "findings"))
	}
	return b.String()
}

// fit renders the answer within maxTokens (0: no limit), dropping
// findings from the end; the disclaimer is always kept.
func (a answer) fit(maxTokens int) (string, int) {
	n := len(a.findings)
	full := a.render(n, false)
	if maxTokens <= 0 || estimateTokens(len(full)) <= maxTokens {
		return full, n
	}
	for k := n - 1; k >= 0; k-- {
		if s := a.render(k, true); estimateTokens(len(s)) <= maxTokens {
			return s, k
		}
	}
	if s := a.render(0, false); estimateTokens(len(s)) <= maxTokens {
		return s, 0
	}
	return Disclaimer + "\n", 0
}

// refText writes path:line so that ParseFindings reads back exactly path:
// as is when it does, else with the path Go-quoted ("a:b.go":3,
// "we\nird.go":3, "\xff.go":3), which ParseFindings unquotes.
func refText(path string, line int) string {
	plain := fmt.Sprintf("%s:%d", path, line)
	if refs := lineRefs(codeSpan(plain)); len(refs) == 1 && refs[0].path == path && refs[0].line == line {
		return plain
	}
	return fmt.Sprintf("%s:%d", strconv.Quote(path), line)
}

// spanText is refText for a span: path:line-end when it is more than
// one line.
func spanText(path string, line, end int) string {
	ref := refText(path, line)
	if end > line {
		ref += "-" + strconv.Itoa(end)
	}
	return ref
}

// writeByFile lists the findings' files, each with its symbols, in the
// order of their best finding, when some file has more than one finding.
func writeByFile(b *strings.Builder, findings []scored) {
	var files []string
	syms := make(map[string][]string)
	for _, f := range findings {
		if _, ok := syms[f.Path]; !ok {
			files = append(files, f.Path)
		}
		name := f.Symbol
		if name == "" {
			name = "line " + strconv.Itoa(f.Line)
		}
		syms[f.Path] = append(syms[f.Path], name)
	}
	if len(files) == len(findings) {
		return
	}
	b.WriteString("\n### By file\n\n")
	for _, p := range files {
		name := codeSpan(p)
		if len(lineRefs(name)) > 0 || strings.ContainsAny(p, "\n`") {
			name = codeSpan(strconv.Quote(p) + " ")
			if len(lineRefs(name)) > 0 {
				continue
			}
		}
		b.WriteString("- " + name + ": " + codeList(syms[p]) + "\n")
	}
}

// codeSpan writes s as a Markdown code span whose fence is longer than
// any run of backticks inside it.
func codeSpan(s string) string {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	if longest == 0 {
		return "`" + s + "`"
	}
	fence := strings.Repeat("`", longest+1)
	return fence + " " + s + " " + fence
}

func codeList(items []string) string {
	spans := make([]string, len(items))
	for i, s := range items {
		spans[i] = codeSpan(s)
	}
	return strings.Join(spans, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// estimateTokens is the usual four bytes a token, rounded up.
func estimateTokens(chars int) int { return (chars + 3) / 4 }
