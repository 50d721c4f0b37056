package outline

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// outlined renders each declaration as "line-end kind name | doc".
func outlined(lang Lang, src string) []string {
	var out []string
	for _, d := range Parse(lang, []byte(src)) {
		s := fmt.Sprintf("%d-%d %s %s", d.Line, d.End, d.Kind, d.Qualified)
		if d.Doc != "" {
			s += " | " + FirstSentence(d.Doc)
		}
		if d.Test {
			s += " (test)"
		}
		out = append(out, s)
	}
	return out
}

func checkOutline(t *testing.T, lang Lang, src string, want ...string) {
	t.Helper()
	got := outlined(lang, src)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestBracesInStringsAndComments: a brace in a string, a comment, a
// template literal, a regular expression, a character literal or a raw
// string does not end a body.
func TestBracesInStringsAndComments(t *testing.T) {
	checkOutline(t, JS, "function a() {\n  const s = \"}\" + '}'\n  // }\n  /* } */\n  const t = `}${ {x: 1}.x }}`\n  const r = /}/\n  return s\n}\nfunction b() {}\n",
		"1-8 func a", "9-9 func b")
	checkOutline(t, JS, "function a() {\n  const t = `line one\n}\nline ${ f({}) } three`\n}\nfunction b() {}\n",
		"1-5 func a", "6-6 func b")
	checkOutline(t, Rust, "fn a() {\n    let s = r##\"}\"#\"##;\n    /* } /* } */ } */\n    let c = '}';\n    let l: &'static str = \"\\\"}\";\n}\nfn b() {}\n",
		"1-6 func a", "7-7 func b")
	checkOutline(t, Java, "class A {\n  String s = \"\"\"\n    }\n    \"\"\";\n  char c = '}';\n  void b() {}\n}\n",
		"1-7 type A", "2-4 value A.s", "5-5 value A.c", "6-6 func A.b")
	checkOutline(t, C, "#define OPEN {\nint a(void)\n{\n  return '}';\n}\nint b(void) { return 0; }\n",
		"1-1 value OPEN", "2-5 func a", "6-6 func b")
}

// TestFunctionBodiesHoldNoDeclarations: what a function declares inside
// is its own business.
func TestFunctionBodiesHoldNoDeclarations(t *testing.T) {
	checkOutline(t, JS, "export function outer() {\n  function inner() {}\n  const x = () => 1\n}\n", "1-4 func outer")
	checkOutline(t, Python, "def outer():\n    def inner():\n        pass\n    class Local:\n        pass\n    return inner\n", "1-6 func outer")
	checkOutline(t, Rust, "fn outer() {\n    fn inner() {}\n    struct Local;\n}\n", "1-4 func outer")
}

func TestPythonSpans(t *testing.T) {
	checkOutline(t, Python, `@decorator
def first(a,
          b):
    """Doc of first.

    More.
    """
    x = """
text at column zero
"""
# a comment at column zero inside the body
    return x


class Outer(object):
    class Inner:
        def method(self): return 1

    def later(self):
        pass
`,
		"2-12 func first | Doc of first.",
		"15-20 type Outer",
		"16-17 type Outer.Inner",
		"17-17 func Outer.Inner.method",
		"19-20 func Outer.later",
	)
	checkOutline(t, Python, "# Adds two numbers.\ndef add(a, b):\n    return a + b\n", "2-3 func add | Adds two numbers.")
}

func TestRustContainers(t *testing.T) {
	checkOutline(t, Rust, `/// A shape.
pub trait Shape {
    /// Its area.
    fn area(&self) -> f64;
    fn name(&self) -> String { String::new() }
}

impl<T: Clone> Shape for Wrapper<T> where T: Default {
    fn area(&self) -> f64 { 0.0 }
}

pub mod geometry {
    pub fn origin() -> (f64, f64) { (0.0, 0.0) }
}

#[cfg(test)]
mod tests {
    #[test]
    fn works() {}
}

macro_rules! square {
    ($x:expr) => { $x * $x };
}
`,
		"2-6 type Shape | A shape.",
		"4-4 func Shape::area | Its area.",
		"5-5 func Shape::name",
		"9-9 func Wrapper::area",
		"13-13 func geometry::origin",
		"19-19 func tests::works (test)",
		"22-24 func square",
	)
}

func TestTypeScriptMembers(t *testing.T) {
	checkOutline(t, JS, `export abstract class Store<T> {
  static instance?: Store<unknown>
  #secret = 1
  protected abstract load(key: string): Promise<T>
  get size(): number {
    return 0
  }
  @memo()
  compute(): number { return 1 }
}

Counter.prototype.increment = function (n) {
  this.n += n
}

export namespace Util {
  export function clamp(n: number) { return n }
}

exports.handler = async (event) => {
  return event
}
`,
		"1-10 type Store",
		"2-2 value Store.instance",
		"3-3 value Store.#secret",
		"4-4 func Store.load",
		"5-7 func Store.size",
		"9-9 func Store.compute",
		"12-14 func Counter.increment",
		"17-17 func Util.clamp",
		"20-22 func handler",
	)
}

func TestGoValuesAndParseErrors(t *testing.T) {
	checkOutline(t, Go, `package p

// Sizes of things.
var (
	small, large = 1, 2
	_ = 3
	table = map[string]int{
		"a": 1,
		"b": 2,
		"c": 3,
	}
)

func Broken( {
`,
		"5-5 value small | Sizes of things.",
		"5-5 value large | Sizes of things.",
		"7-11 value table | Sizes of things.",
		"14-14 func Broken", // what the parser could read
	)
	d := Parse(Go, []byte("package p\n\nvar table = map[string]int{\n\t\"a\": 1,\n\t\"b\": 2,\n\t\"c\": 3,\n}\n"))[0]
	if d.Signature != `var table = map[string]int{ "a": 1,` {
		t.Errorf("a long value's signature is %q, want its first lines only", d.Signature)
	}
	if got := Parse(Go, []byte("not go at all {")); len(got) != 0 {
		t.Errorf("not Go: %v, want nothing", got)
	}
}

func TestFirstSentence(t *testing.T) {
	tests := []struct{ doc, want string }{
		{"Shutdown stops the server. It waits.", "Shutdown stops the server."},
		{"Reads a file, e.g. a config.\nThen parses it.", "Reads a file, e.g. a config."},
		{"One line\ncontinued here.\n\nSecond paragraph.", "One line continued here."},
		{"@constructor\n@param x the value,\n  continued.\n\nMakes a thing. More.", "Makes a thing."},
		{"Fetches.\n@param path the path", "Fetches."},
		{"Is it? Yes.", "Is it?"},
		{"Wraps rc with two features: 1. Cancel it. 2. Time it.", "Wraps rc with two features: 1. Cancel it. 2. Time it."}, // "1." ends no sentence
		{"", ""},
	}
	for _, tt := range tests {
		if got := FirstSentence(tt.doc); got != tt.want {
			t.Errorf("FirstSentence(%q) = %q, want %q", tt.doc, got, tt.want)
		}
	}
}

func TestFileClasses(t *testing.T) {
	for name, want := range map[string]bool{
		"server_test.go": true, "server.go": false, "test_api.py": true, "api_test.py": true, "conftest.py": true,
		"api.py": false, "client.test.ts": true, "client.spec.js": true, "client.ts": false, "SyncTest.java": true,
		"Sync.java": false, "test_wc.c": true, "wc.c": false, "latest.go": false, "testing.go": false,
	} {
		if got := TestFile(name); got != want {
			t.Errorf("TestFile(%q) = %v, want %v", name, got, want)
		}
	}
	for name, want := range map[string]Lang{
		"a.go": Go, "a.py": Python, "a.pyi": Python, "a.tsx": JS, "a.mjs": JS, "a.rs": Rust, "A.java": Java,
		"a.h": C, "a.c": C, "a.md": 0, "Makefile": 0, "a.cpp": 0,
	} {
		if got := LangOf(name); got != want {
			t.Errorf("LangOf(%q) = %v, want %v", name, got, want)
		}
	}
	gen := map[string]bool{
		"// Code generated by stringer. DO NOT EDIT.\n\npackage p\n": true,
		"# @generated by a tool\n":                                   true,
		"// <auto-generated />\n":                                    true,
		"package p\n\n// Do not edit lightly.\n":                     false,
		strings.Repeat("\n", 3000) + "// DO NOT EDIT":                false,
	}
	for src, want := range gen {
		if got := Generated("x.go", []byte(src)); got != want {
			t.Errorf("Generated(%.40q) = %v, want %v", src, got, want)
		}
	}
	if !Generated("app.min.js", []byte("x")) {
		t.Error("a minified file is generated")
	}
	if !TestDir("testdata") || !VendorDir("node_modules") || TestDir("src") || VendorDir("lib") {
		t.Error("TestDir or VendorDir is wrong")
	}
}

// FuzzParse checks, for any input in any language, that parsing ends
// without a panic and every declaration is sane: inside the file, its
// end not before its start, a name, one line of signature.
func FuzzParse(f *testing.F) {
	seeds := []string{
		"package p\n\nfunc (s *S) M() {}\n",
		"class A:\n    def f(self):\n        '''doc'''\n",
		"export class A { m() { return `${1}` } }\n",
		"impl<T> A<T> { fn f(&self) { let s = r#\"x\"#; } }\n",
		"class A { void f() {} }\n",
		"#define X \\\n  1\nint\nmain(void)\n{\n}\n",
		"/* unclosed", "`${", "r#\"", "'''", "{{{{", "}}}}", "(((",
	}
	for _, s := range seeds {
		for lang := Go; lang <= C; lang++ {
			f.Add(uint8(lang), s)
		}
	}
	f.Fuzz(func(t *testing.T, lang uint8, src string) {
		l := Lang(lang%uint8(C) + 1)
		lines := strings.Count(src, "\n") + 1
		decls := Parse(l, []byte(src))
		for _, d := range decls {
			if d.Line < 1 || d.End < d.Line || d.End > lines {
				t.Fatalf("%v: %s at %d-%d of %d lines", l, d.Qualified, d.Line, d.End, lines)
			}
			if d.Name == "" || d.Kind < Func || d.Kind > Value {
				t.Fatalf("%v: a declaration with no name or kind: %+v", l, d)
			}
			if strings.ContainsAny(d.Signature, "\n\r") || utf8.RuneCountInString(d.Signature) > maxSignature {
				t.Fatalf("%v: signature %q is not one line of at most %d runes", l, d.Signature, maxSignature)
			}
		}
	})
}

// TestTypeScriptOverloads: the signatures of an overloaded function
// are one declaration with its implementation, which holds their doc
// comments; signatures with no implementation (a declaration file, an
// interface) stay as they are.
func TestTypeScriptOverloads(t *testing.T) {
	checkOutline(t, JS, `/** Waits for due, then emits 0. */
export function timer(due: number): Observable<0>;
/** Waits for due, then emits every period. */
export function timer(due: number, period: number): Observable<number>;
export function timer(due: number, period?: number): Observable<number> {
  return new Observable()
}

class Box {
  get(key: string): string;
  get(key: number): string;
  get(key: any): string {
    return ""
  }
}

export declare function parse(s: string): number;
export declare function parse(s: string, radix: number): number;
`,
		"5-7 func timer | Waits for due, then emits 0.",
		"9-15 type Box",
		"12-14 func Box.get",
		"17-17 func parse",
		"18-18 func parse",
	)
	decls := Parse(JS, []byte("/** One. */\nfunction f(a: string): void;\n/** Two. */\nfunction f(a: any): void {\n}\n"))
	if len(decls) != 1 || decls[0].Doc != "One.\n\nTwo." {
		t.Errorf("got %+v, want one declaration whose doc holds both comments", decls)
	}
}
