// Package outline finds the declarations of a source file — its
// functions, types and values — with the lines each spans, its header
// on one line and its doc comment, for the symbols tool.
//
// Go is parsed with go/parser: functions, and methods with their
// receiver ("(*Server).Shutdown", "Header.Get"); types, with the named
// fields of structs and the methods of interfaces; each name of a const
// or var declaration, grouped or not; the doc comment the parser
// attaches to each (a field's or value's line comment when it has no
// doc comment, a group's doc for the values in it).
//
// Python is read by indentation: def and class, each spanning its body,
// methods named Class.method, functions inside functions left out, the
// docstring as doc (or else the '#' comment lines just above).
//
// JavaScript and TypeScript, Rust, Java and C are read by line patterns:
// a declaration is a line at the top level, or at the top of a
// container's body, that a pattern of its language matches, and spans
// to the brace that closes its body, or to its ';'. Strings, comments,
// template literals, regular expression literals, character literals,
// raw strings and preprocessor lines are passed over when braces are
// counted. The comment lines just above a declaration, past attributes,
// annotations and decorators, are its doc. The containers are classes
// and interfaces (their methods and properties), Rust traits, impl
// blocks and modules (Parser::next_token), Java classes, interfaces,
// enums and records, and TypeScript namespaces; function bodies are
// never searched for declarations. Declarations inside a Rust module
// under #[cfg(test)] are marked Test.
//
// Generated, TestFile, TestDir and VendorDir say which files and
// directories hold generated code, tests and other projects' code, for
// a caller that leaves them out.
//
// Nothing here runs or imports the code it reads; source that does not
// parse gives what could be read of it.
package outline
