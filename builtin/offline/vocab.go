package offline

import (
	"strings"
	"sync"
)

// vocabulary maps the words people use in questions to the words code
// uses for the same thing. Keys and values are plain lower-case words;
// both sides are stemmed with codeStem when used. An entry is only a hint
// for the search: a word always also stands for itself. It is parsed on
// first use, not when the program starts: most commands never search.
var vocabulary = sync.OnceValue(func() map[string][]string { return parseVocabulary(vocabularyText) })

const vocabularyText = `
abort: cancel stop kill
enforce: exceed limit
enforced: exceed limit
spawn: start new
spawned: start new
subagent: child agent
subagents: child agent
children: child
transcript: transcript log
lifecycle: state transition
budgets: budget
money: cost
price: cost
spend: cost usage
spent: cost usage
used: usage
message: msg
messages: msg
queue: queue pending
queued: queue pending
concurrency: limit slot
parallel: concurrent group
crashed: exit panic
died: exit
verify: check valid
checksum: sha256 hash sum
dependency: import
imports: import
build: build compile
compile: build
run: run exec
execute: exec run
executed: exec run
shell: sh exec
argument: arg
option: opt flag
options: opt flag
flags: flag
variable: var
add: append insert put register
allowed: permit allow valid
annotation: tag attribute decorator
app: server main
archive: archive hide
arguments: args argv params
attach: comment doc
authenticate: auth token verify login
authentication: auth token verify
authorization: auth bearer token
authorize: auth
backend: target upstream director
backoff: retry delay
big: size max limit
block: wait
boot: start init
broadcast: publish emit notify
bytes: byte data
cache: cache memo
cancel: cancel context done
cancelled: cancel context done
capitalisation: canonical
capitalization: canonical
capture: output buffer
change: update modify
characters: rune char
check: check valid verify
checked: check valid verify
child: child process
cleaned: remove rotate prune delete
clean: remove rotate prune delete
close: close shutdown
command: cmd exec
compare: compare equal
compressed: gzip compress deflate
config: config settings options
configuration: config settings options
connection: conn
connections: conn
constant: constant compare_digest
count: count len
crash: panic recover
crashes: panic recover
create: new make create init
credentials: auth password token
cut: truncate limit timeout
database: db store sqlite
debug: dump
debugging: dump
decide: decide check
decoded: decode parse read unmarshal
decoding: decode parse unmarshal
delay: delay backoff sleep
delete: delete remove prune
deleted: delete remove prune
deleting: delete remove
disk: file fs
document: valid
duplicate: dedup
duplicates: dedup
encoded: encode marshal
end: close shutdown finish
environment: env environ
error: err error
errors: err error
escape: escape quote
escapes: escape unquote
event: event emit
exit: exit wait status
expire: expire timeout deadline
export: export write
fail: fail error
failed: fail error retry
filename: slug path name
finish: finish done wait close
forward: proxy serve
generic: type param
glob: glob pattern
graceful: shutdown
guess: detect sniff determine
handler: handler handle
hash: hash sum digest checksum
helper: func
hidden: archive hide
hide: archive hide
highlight: highlight excerpt
html: html escape
ignore: ignore skip
incoming: request serve
indentation: indent
iterate: range loop
keep: keep alive
kill: kill signal terminate cancel
killed: kill signal cancel
launch: start serve run
launches: start serve run
limit: limit max
listen: listen serve
load: load parse read
loaded: load parse read
location: path
log: log transcript
logs: log transcript
lookup: lookup find
loop: loop for serve
member: field
mime: content type sniff
normalised: canonical
normalized: canonical
normalise: canonical
normalize: canonical
old: old prune rotate
oldest: old prune rotate
open: dial connect open
password: password auth
pick: find match select
port: port listen
pretty: indent
print: print dump write format
printed: print dump indent
process: process cmd
program: executable binary cmd
prompt: prompt input
raw: dump raw
read: read parse
reading: read
register: register add
registered: register add
remove: remove delete dedup
removed: remove delete dedup prune
removing: remove delete
repeated: dedup duplicate
reject: disallow refuse
reply: response
request: request req
requests: request req
response: response resp
reused: reuse idle pool
router: mux route
runs: run
safe: escape
save: save store write add insert
saved: save store write add insert
schema: migrate create table
searching: search lookup find
send: send write
sent: write send
setup: init migrate
shorten: truncate cut
size: size len max
skip: skip ignore omit
slow: timeout
sorted: sort
split: split parse cut
standard: canonical
start: start serve
started: start serve
status: status code
stop: stop shutdown close cancel
stops: stop shutdown close
storage: store db
store: store save write
stored: store save
tagged: tag
terminated: kill cancel signal
text: text string
throttle: rate limit
throttled: rate limit limiter
timeout: timeout deadline
tokens: token usage
too: max limit
true: truth true
turned: convert
type: type kind
types: type kind
unzip: gzip decompress
unzipped: gzip decompress
upload: multipart form file
uploaded: multipart form file
url: url path
username: user basic auth
valid: valid check
validated: validate valid check
web: html http
well: valid
whether: check
words: word token
allocate: alloc new make
append: add push
begin: start init
callback: hook handler fn
collect: gather
combine: merge join
compress: gzip deflate zip
concatenate: join concat
connect: dial
convert: parse format encode
copy: clone dup
decrypt: cipher open
destroy: close free release
disconnect: close
discover: find scan
download: fetch get
empty: zero nil
encrypt: cipher seal
entry: item
erase: delete clear
exists: stat
expand: grow
fetch: get load
filter: match select
flush: sync write
format: fmt print
free: release close
generate: gen make new
grow: expand resize
identifier: id name
increase: grow inc
initialize: init setup
insert: add put
invoke: call
join: concat merge
length: len size
lock: mutex mu
merge: combine join
modify: update set
notify: emit signal publish
order: sort
overflow: max limit
pause: sleep wait
persist: save store write
position: pos offset
quote: escape
random: rand
receive: recv read
refresh: reload update
release: free close unlock
rename: move
replace: swap sub
reset: clear zero
resize: grow
resolve: lookup
restore: load
reverse: flip
schedule: timer cron
shrink: trim
shutdown: close stop
signal: notify
sleep: wait delay
stream: reader writer
subscribe: listen watch
swap: replace
synchronize: sync lock
terminate: kill stop exit
timestamp: time
toggle: flip
trim: strip
unique: dedup
unlock: release
update: set modify
uppercase: upper
lowercase: lower
validate: check verify
watch: observe subscribe
wrap: wrapper
`

// parseVocabulary reads "word: code words" lines.
func parseVocabulary(text string) map[string][]string {
	v := make(map[string][]string)
	for _, line := range strings.Split(text, "\n") {
		k, vals, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		k = strings.TrimSpace(k)
		for _, w := range strings.Fields(vals) {
			if w != k {
				v[k] = append(v[k], w)
			}
		}
	}
	return v
}

// codeStem reduces a lower-case word to a stem for matching the words of
// code against the words of a question: "retries", "retried", "retrying"
// and "retry" all give "retri"; "parse", "parsed" and "parser" give "pars".
func codeStem(w string) string {
	if len(w) <= 3 {
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies") || strings.HasSuffix(w, "ied"):
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"), strings.HasSuffix(w, "xes"), strings.HasSuffix(w, "ches"),
		strings.HasSuffix(w, "shes"), strings.HasSuffix(w, "zes"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		w = w[:len(w)-1]
	}
	switch {
	case len(w) > 5 && strings.HasSuffix(w, "ing"):
		w = w[:len(w)-3]
	case len(w) > 4 && (strings.HasSuffix(w, "ed") && !strings.HasSuffix(w, "eed") || strings.HasSuffix(w, "er")):
		w = w[:len(w)-2]
	}
	switch {
	case len(w) > 3 && strings.HasSuffix(w, "e"):
		w = w[:len(w)-1]
	case len(w) > 3 && strings.HasSuffix(w, "y"):
		w = w[:len(w)-1] + "i"
	}
	return w
}
