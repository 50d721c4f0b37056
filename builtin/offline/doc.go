// Package offline provides troupe's offline retrieval model: a deterministic
// llms.Model that needs no API key and no network, so that the explore agent
// works on any machine.
//
// The model is not a language model. It runs a fixed retrieval policy
// through the same native tool calling a real model uses:
//
//  1. From the task (the last human message, or, when the manager names
//     it in modelcap.CallInfo, the task as its caller gave it, so that
//     words a type's Prompt hook or inherited context wrote around it
//     are not searched for) it extracts search terms — identifiers, their
//     camelCase and snake_case parts, quoted strings and the remaining
//     words minus stop words — and concepts: each word with its stem and
//     the words code uses for it. One stemmer, codeStem, serves
//     everything ("retries", "retried" and "retry" meet). The words code uses
//     come from vocab.txt, general programming synonyms ("remove" → delete,
//     drop, evict; "check" → valid, verify), and the stop words, generic
//     function words and the phrasing of questions, from stopwords.txt; both
//     are embedded, with the rule an entry must follow written at their top.
//     When the symbols tool is offered, it asks it for the declarations
//     whose names or doc comments hold the concepts' words (each concept's
//     word or stem and its vocabulary words). It calls glob on file names
//     containing the top terms, grep per concept
//     for the definition lines that name it (Go, Python, JS/TS, Java, Rust and
//     C keywords, C and shell functions, class methods), grep for the lines
//     where two concepts meet, and grep for the top terms as written. Each
//     grep is shaped so that the grep tool's literal prefilter applies.
//  2. Every grep line becomes a candidate definition, or joins the definition
//     above it (its body) or below it (its doc comment); a line in no known
//     definition is an anchor. The symbols tool's declarations complete the
//     definitions grep found with their span, kind and doc comment, and
//     join them when their doc comment holds one of the question's own
//     words (grep finds those whose names do; a word only of the
//     vocabulary is too weak alone); a line inside a declaration's known
//     span is its body. When neither found anything, the files glob found
//     by name are the candidates, read from their top. Candidates are scored
//     with a BM25-like sum over fields — name, signature, doc comment, body,
//     path — weighted by how rare each concept is among the lines found
//     and, with the symbols tool's counts, among all the tree's
//     declarations (the mean of the two idfs);
//     functions rank over types over variables, and tests, docs, examples,
//     vendored and generated files lower unless the task asks for them. It
//     calls read on the best candidates, from a few lines above each
//     definition (its doc comment), or above an anchor to find the definition
//     it is in.
//  3. From the numbered lines read it takes each definition's span (Go by
//     go/scanner tokens, Python by indentation and brackets, the rest by
//     braces), its signature (Go's parsed with go/parser and printed on one
//     line), doc comment and body (a TypeScript function's overload
//     signatures and their doc comments are one definition with its
//     implementation), scores again, and answers with ranked
//     findings as Markdown: a first line saying that this is the offline
//     retrieval model and how to configure a real one, then "## Findings" with
//     one numbered item per definition — `path:line-end`, " in " its signature
//     as symbol, the body line that does the most of what was asked as
//     snippet, and a relevance — then "### By file" listing each file with its
//     symbols when a file has several. A path that would not read back as
//     itself (it holds ':', a newline, a space, bytes that are not UTF-8, ...)
//     is Go-quoted: `"a:b.go":3`. An anchor that is in no definition read is a
//     finding of its best matching line; a file found by name, of its first
//     line. When nothing matches, the answer says so and suggests other
//     spellings to search for.
//
// The model reads the repository only through those tool calls, so that
// budgets and progress apply to all it does: it builds no index of the
// whole tree. Each question costs one turn of greps and a symbols call
// (a dozen calls at most, each bounded by max_results), one turn of at
// most six reads of ninety lines, and the answer. The search fits what the agent's budgets
// leave, so that a small budget gets a smaller search and an answer
// rather than a run cut short before it: the tokens left (WithMaxTokens,
// as the manager passes them) and the turns and tool calls left
// (modelcap.CallInfo).
//
//   - With too few tokens for the full search it asks for fewer lines,
//     searches three concepts and reads four definitions; with fewer
//     still it reads nothing and answers from the grep lines, with fewer
//     greps, down to one.
//   - With two turns left it answers from the grep lines; with one, it
//     searches all the same and says that no turn is left to answer.
//   - Of the tool calls left, a third at most go to reads.
//   - The turn that reads says what the search alone found, so that a
//     run cut short while it reads (its time, a cancel, a budget its
//     siblings share) returns those findings as its partial output.
//
// When the tools offered include delegate and the task explicitly asks
// several things — the items of a bulleted or numbered list, or several
// sentences ending with '?' — the model delegates instead of searching:
//
//  1. Its first turn is one delegate call with an explore task per
//     question (at most 8; the label is made of the question's words, the
//     prompt is the question, max_tokens its share of the tokens left
//     after what merging takes, max_tool_calls its share of the tool
//     calls left), concurrency 2, mode parallel, return json. When a
//     share would pay for no search of its own (under a tool call or
//     some 1500 tokens a child), or no turn is left to merge in, the task
//     is searched as one instead.
//  2. Given the delegate tool's result, it answers with a first line
//     saying that the split into subtasks was mechanical, one per listed
//     question, and that it is not a language model, then one section per
//     question with the findings of that question's child, read from the
//     child's report with ParseFindings and written again as `path:line`
//     items, so that ParseFindings of the merged answer gives every
//     child's findings. A result that is not JSON is quoted as it came.
//
// A task that asks one thing is searched as above; so is every task of a
// child, which is not offered delegate.
//
// Everything is derived from the messages, so one Model is safe for
// concurrent use and the same conversation always gets the same answer.
// Token usage is estimated (four bytes a token) and reported in the
// choice's GenerationInfo like a provider would; the tool definitions,
// which it does not read, cost nothing (CountToolTokens). WithMaxTokens is
// honoured by dropping findings from the end.
//
// Tool output is read with the tools package's own decoders
// (tools.ParseGrep, tools.ParseGlob and tools.ParseSymbols), which give
// back exact paths, so that every finding names a file that exists.
//
// ParseFindings turns an answer — the offline model's or a real model's —
// into a list of Finding values for structured output: path, line,
// end_line (from path:line-end), symbol (from " in `symbol`" after the
// reference), snippet and relevance. A Finding's JSON
// carries a path that is not UTF-8 exactly in "path_bytes" (see Finding).
package offline
