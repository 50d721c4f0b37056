package models

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/fsroot"
	"github.com/troupe-dev/troupe/builtin/models/modelname"
	"github.com/troupe-dev/troupe/builtin/suggest"
)

// ErrConfig is wrapped by every error about a config file.
var ErrConfig = errors.New("bad troupe config")

// Config is what the config files say about models. Read it with
// LoadConfig; the zero value is an empty config.
//
//	# $XDG_CONFIG_HOME/troupe/config.yaml, or .troupe/config.yaml in a project
//	model: sonnet                    # the default model: provider:model, an alias, or offline
//	aliases:                         # short names; these four are built in
//	  sonnet: anthropic:claude-sonnet-4-5
//	  mini: openai:gpt-4o-mini
//	providers:
//	  openai:
//	    base_url: http://127.0.0.1:8000/v1   # an OpenAI-compatible server
//	    api_key_env: VLLM_API_KEY            # read the key from this variable
//	    model: gpt-4o-mini                   # used when this key is what picks the default
//	  anthropic: {api_key: sk-ant-...}       # user config only; never in a project file
//	  ollama: {host: http://gpu-box:11434, model: qwen2.5-coder}
//	  googleai: {model: gemini-2.5-flash}
//	prices:                          # USD per million tokens
//	  openai:gpt-4o-mini: {input: 0.15, output: 0.60}
//	output_limits:                   # most output tokens one call may ask for
//	  ollama:qwen2.5-coder: 4096
//	retry: {attempts: 4, max_wait: 60s}
//	max_response_bytes: 67108864     # most bytes read of one provider response (64 MiB)
//	run: {allow: ["go test", make]}  # a project's file only; agenttypes.ReadRunConfig reads it
type Config struct {
	// Model is the default model.
	Model string `yaml:"model"`
	// Aliases maps short names to full model names.
	Aliases map[string]string `yaml:"aliases"`
	// Providers configures each provider.
	Providers Providers `yaml:"providers"`
	// Prices is USD per million tokens, by full model name.
	Prices map[string]Price `yaml:"prices"`
	// OutputLimits caps the output tokens one call asks for, by full
	// model name, over the built-in table.
	OutputLimits map[string]int `yaml:"output_limits"`
	// Retry tunes retries of rate-limited and failed calls.
	Retry RetryConfig `yaml:"retry"`
	// MaxResponseBytes caps what is read of one provider response; 0
	// means DefaultMaxResponseBytes.
	MaxResponseBytes int64 `yaml:"max_response_bytes"`

	// Files are the files read, user first.
	Files []string `yaml:"-"`
	// ModelFrom is the file that set Model.
	ModelFrom string `yaml:"-"`
	// Withheld are the project file's settings that send requests or a
	// key somewhere, held back until Admit lets them apply.
	Withheld []Setting `yaml:"-"`

	lines map[string]int // "providers.NAME.KEY" → its line in the file
}

// A Setting is a setting of a project's config file that decides where
// requests, and the user's key with them, go: a provider's base_url or
// host, or the variable api_key_env reads the key from. A repository
// chooses these, so they apply only once the user trusts the project.
type Setting struct {
	File     string `json:"file"`
	Line     int    `json:"line,omitempty"`
	Provider string `json:"provider"`
	// Key is base_url, host or api_key_env.
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Name is the setting's key path, as in providers.openai.base_url.
func (s Setting) Name() string { return "providers." + s.Provider + "." + s.Key }

// Admit applies the withheld settings allow accepts, and returns those
// still withheld.
func (c *Config) Admit(allow func(Setting) bool) []Setting {
	var kept []Setting
	for _, st := range c.Withheld {
		if allow == nil || !allow(st) {
			kept = append(kept, st)
			continue
		}
		p := c.Providers.get(st.Provider)
		switch st.Key {
		case "base_url":
			p.BaseURL = st.Value
		case "host":
			p.Host = st.Value
		case "api_key_env":
			p.APIKey, p.APIKeyEnv = "", st.Value
		}
	}
	c.Withheld = kept
	return kept
}

// withhold moves the settings of a project file that need trust out of c
// into the returned list.
func (c *Config) withhold(file string) []Setting {
	var out []Setting
	for _, name := range providerNames {
		p := c.Providers.get(name)
		for _, f := range []struct {
			key string
			v   *string
		}{{"base_url", &p.BaseURL}, {"host", &p.Host}, {"api_key_env", &p.APIKeyEnv}} {
			if *f.v == "" {
				continue
			}
			st := Setting{File: file, Provider: name, Key: f.key, Value: *f.v}
			st.Line = c.lines[st.Name()]
			out = append(out, st)
			*f.v = ""
		}
	}
	return out
}

// Providers holds one section per provider.
type Providers struct {
	OpenAI    ProviderConfig `yaml:"openai"`
	Anthropic ProviderConfig `yaml:"anthropic"`
	Ollama    ProviderConfig `yaml:"ollama"`
	GoogleAI  ProviderConfig `yaml:"googleai"`
}

func (p *Providers) get(name string) *ProviderConfig {
	switch name {
	case "openai":
		return &p.OpenAI
	case "anthropic":
		return &p.Anthropic
	case "ollama":
		return &p.Ollama
	case "googleai":
		return &p.GoogleAI
	}
	return nil
}

// ProviderConfig is one provider's section.
type ProviderConfig struct {
	// BaseURL is the API's base URL (not for ollama).
	BaseURL string `yaml:"base_url"`
	// Host is Ollama's address, as in OLLAMA_HOST (ollama only).
	Host string `yaml:"host"`
	// APIKey is the key itself; allowed in the user config only.
	APIKey string `yaml:"api_key"`
	// APIKeyEnv names the environment variable holding the key, instead
	// of the provider's usual one.
	APIKeyEnv string `yaml:"api_key_env"`
	// Model is the model used when this provider is picked as the default
	// because its key is present (or, for ollama, because it is running).
	Model string `yaml:"model"`
}

// Price is what a model costs, in USD per million tokens.
type Price struct {
	Input  float64 `yaml:"input"`
	Output float64 `yaml:"output"`
}

// Cost is the price of a call with these token counts.
func (p Price) Cost(in, out int) float64 {
	return (float64(in)*p.Input + float64(out)*p.Output) / 1e6
}

// RetryConfig is the retry section.
type RetryConfig struct {
	// Attempts is how many times a call is made at most; 1 turns
	// retries off.
	Attempts int `yaml:"attempts"`
	// MaxWait is the longest wait between attempts troupe accepts; a
	// provider asking for longer ends the call.
	MaxWait Duration `yaml:"max_wait"`
}

// Duration is a time.Duration written as "90s" or "2m".
type Duration time.Duration

// UnmarshalYAML reads a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil || v < 0 {
		return fmt.Errorf("line %d: %q is not a duration such as 30s or 2m", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// ConfigFiles returns the user config file ($XDG_CONFIG_HOME/troupe/
// config.yaml, else ~/.config/troupe/config.yaml) and the project's
// (.troupe/config.yaml at the project root above dir: the nearest
// directory holding .troupe or .git). Either may not exist; project is ""
// when dir is "".
func ConfigFiles(getenv func(string) string, dir string) (user, project string) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if x := getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
		user = filepath.Join(x, "troupe", "config.yaml")
	} else if home := homeDir(getenv); home != "" {
		user = filepath.Join(home, ".config", "troupe", "config.yaml")
	}
	if dir != "" {
		project = filepath.Join(agenttypes.FindProjectRoot(dir), ".troupe", "config.yaml")
	}
	return user, project
}

func homeDir(getenv func(string) string) string {
	if h := getenv("HOME"); h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}

// LoadConfig reads the user and then the project config file, the project
// overriding the user key by key. The project file's endpoints and key
// variables are not applied but kept in Withheld: a repository may not
// point a provider, and the user's key, at a server of its choosing
// until the user trusts it (Admit). A file that does not exist is skipped;
// one that cannot be read or does not follow the schema is an error naming
// the file, the line and the key.
func LoadConfig(user, project string) (*Config, error) {
	cfg := &Config{}
	for _, f := range []struct {
		path    string
		project bool
	}{{user, false}, {project, true}} {
		if f.path == "" {
			continue
		}
		b, err := readConfigFile(f.path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		c, err := ParseConfig(f.path, bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		if !f.project && c.lines["run"] > 0 {
			return nil, fmt.Errorf("%w: %s:%d: run: names the commands a project's agents may run, so it belongs in the project's .troupe/config.yaml; move it there",
				ErrConfig, f.path, c.lines["run"])
		}
		if f.project {
			for _, name := range providerNames {
				if c.Providers.get(name).APIKey != "" {
					return nil, fmt.Errorf("%w: %s: providers.%s.api_key: a key does not belong in a project file that may be committed; put it in the environment (%s), or in %s",
						ErrConfig, f.path, name, keyEnv[name], orDefault(user, "the user config"))
				}
			}
			cfg.Withheld = c.withhold(f.path)
		}
		cfg.merge(c)
		cfg.Files = append(cfg.Files, f.path)
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// MaxConfigSize is the largest config file read; config files are a few
// lines long.
const MaxConfigSize = 1 << 20

// readConfigFile reads a config file that is a regular file of at most
// MaxConfigSize. A named pipe, device or directory in its place is an
// error, found without blocking; a missing file is fs.ErrNotExist.
func readConfigFile(path string) ([]byte, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrConfig, path, fmt.Sprintf(format, args...))
	}
	f, fi, err := fsroot.OpenRegular(nil, path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if errors.Is(err, fsroot.ErrNotRegular) {
		return nil, bad("is a %s, not a regular file; a config file is a YAML file", fsroot.Kind(fi.Mode()))
	}
	if err != nil {
		return nil, bad("%v", unwrapPath(err))
	}
	defer f.Close()
	if fi.Size() > MaxConfigSize {
		return nil, bad("is %s; config files are limited to %s: is this the right file?", sizeString(fi.Size()), sizeString(MaxConfigSize))
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxConfigSize+1))
	if err != nil {
		return nil, bad("%v", unwrapPath(err))
	}
	if len(b) > MaxConfigSize {
		return nil, bad("is over %s; config files are limited to that: is this the right file?", sizeString(MaxConfigSize))
	}
	return b, nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// keys the schema allows, by section; "*" stands for any name.
var schema = map[string][]string{
	"":            {"model", "aliases", "providers", "prices", "output_limits", "retry", "max_response_bytes", "run", "mcp_servers"},
	"providers":   {"openai", "anthropic", "ollama", "googleai"},
	"providers.*": {"base_url", "host", "api_key", "api_key_env", "model"},
	"prices.*":    {"input", "output"},
	"retry":       {"attempts", "max_wait"},
}

// ParseConfig reads one config file strictly: unknown keys, wrong types,
// duplicate keys and invalid values are errors naming name and the line.
func ParseConfig(name string, r io.Reader) (*Config, error) {
	bad := func(line int, format string, args ...any) error {
		where := name
		if line > 0 {
			where = fmt.Sprintf("%s:%d", name, line)
		}
		return fmt.Errorf("%w: %s: %s", ErrConfig, where, fmt.Sprintf(format, args...))
	}
	b, err := io.ReadAll(io.LimitReader(r, MaxConfigSize+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrConfig, name, err)
	}
	if len(b) > MaxConfigSize {
		return nil, bad(0, "is over %s; config files are limited to that: is this the right file?", sizeString(MaxConfigSize))
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return &Config{}, nil // an empty file
		}
		return nil, bad(0, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, bad(extra.Line, "more than one YAML document; a config file holds one mapping")
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return &Config{}, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, bad(root.Line, "the file must be a mapping of keys (model:, aliases:, providers:, prices:, output_limits:, retry:, max_response_bytes:)")
	}
	if err := checkKeys(root, "", "", bad); err != nil {
		return nil, err
	}
	var c Config
	if err := root.Decode(&c); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n")
		msg = strings.Join(strings.Fields(msg), " ")
		return nil, bad(0, "%s", msg)
	}
	if err := c.validate(root, bad); err != nil {
		return nil, err
	}
	c.lines = map[string]int{}
	if runAt := keyLine(root, "run"); runAt > 0 {
		c.lines["run"] = runAt // its contents are agenttypes.ReadRunConfig's to check
	}
	for _, name := range providerNames {
		for _, key := range []string{"base_url", "host", "api_key_env"} {
			c.lines["providers."+name+"."+key] = lineOf(root, "providers", name, key)
		}
	}
	if c.Model != "" {
		c.ModelFrom = name
	}
	return &c, nil
}

func checkKeys(n *yaml.Node, path, shown string, bad func(int, string, ...any) error) error {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	allowed, known := schema[path]
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if known && !slices.Contains(allowed, k.Value) {
			where := "at the top level"
			if shown != "" {
				where = "in " + shown
			}
			msg := fmt.Sprintf("unknown key %q %s", k.Value, where)
			if s := suggest.Nearest(k.Value, allowed); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			}
			return bad(k.Line, "%s (the keys are: %s)", msg, strings.Join(allowed, ", "))
		}
		child, childShown := childPath(path, k.Value), k.Value
		if shown != "" {
			childShown = shown + "." + k.Value
		}
		if err := checkKeys(v, child, childShown, bad); err != nil {
			return err
		}
	}
	return nil
}

// childPath is the schema section of key under path: its own name, or
// the section's "*" entry.
func childPath(path, key string) string {
	p, wild := key, "*"
	if path != "" {
		p, wild = path+"."+key, path+".*"
	}
	if _, ok := schema[p]; ok {
		return p
	}
	if _, ok := schema[wild]; ok {
		return wild
	}
	return p
}

func (c *Config) validate(root *yaml.Node, bad func(int, string, ...any) error) error {
	line := func(path ...string) int { return lineOf(root, path...) }
	if c.Model != "" {
		if err := checkName(c.Model, true); err != nil {
			return bad(line("model"), "model: %v", err)
		}
	}
	for _, k := range sortedKeys(c.Aliases) {
		v := c.Aliases[k]
		if strings.Contains(k, ":") || strings.TrimSpace(k) == "" || k == Offline {
			return bad(line("aliases", k), "aliases: %q cannot be an alias; an alias is a short name without a colon", k)
		}
		if err := checkName(v, false); err != nil {
			return bad(line("aliases", k), "aliases.%s: %v", k, err)
		}
	}
	for _, name := range providerNames {
		p := c.Providers.get(name)
		if name == "ollama" && p.BaseURL != "" {
			return bad(line("providers", name, "base_url"), "providers.ollama: use host (as in OLLAMA_HOST), not base_url")
		}
		if name != "ollama" && p.Host != "" {
			return bad(line("providers", name, "host"), "providers.%s: host is for ollama; use base_url", name)
		}
		if p.APIKey != "" && p.APIKeyEnv != "" {
			return bad(line("providers", name), "providers.%s: give api_key or api_key_env, not both", name)
		}
		if name == "ollama" && (p.APIKey != "" || p.APIKeyEnv != "") {
			return bad(line("providers", name), "providers.ollama: Ollama takes no key")
		}
		for _, u := range []string{p.BaseURL, p.Host} {
			if u != "" && strings.ContainsAny(u, " \t\n") {
				return bad(line("providers", name), "providers.%s: %q is not a URL", name, u)
			}
		}
		if strings.Contains(p.Model, ":") && !strings.HasPrefix(p.Model, name+":") && name != "ollama" {
			return bad(line("providers", name, "model"), "providers.%s.model: give the model without a provider, such as %q", name, "gpt-4o-mini")
		}
	}
	for _, k := range sortedKeys(c.Prices) {
		p := c.Prices[k]
		if err := checkName(k, true); err != nil {
			return bad(line("prices", k), "prices: %q: %v", k, err)
		}
		if p.Input < 0 || p.Output < 0 {
			return bad(line("prices", k), "prices.%s: a price cannot be negative", k)
		}
	}
	for _, k := range sortedKeys(c.OutputLimits) {
		if err := checkName(k, true); err != nil {
			return bad(line("output_limits", k), "output_limits: %q: %v", k, err)
		}
		if c.OutputLimits[k] <= 0 {
			return bad(line("output_limits", k), "output_limits.%s: must be a positive number of tokens", k)
		}
	}
	if c.MaxResponseBytes < 0 {
		return bad(line("max_response_bytes"), "max_response_bytes: must be a positive number of bytes, such as %d (64 MiB)", DefaultMaxResponseBytes)
	}
	if a := c.Retry.Attempts; a < 0 || a > 10 {
		return bad(line("retry", "attempts"), "retry.attempts: %d is not between 1 and 10", a)
	}
	return nil
}

// checkName checks a model name's form; aliasOK allows a bare alias.
func checkName(name string, aliasOK bool) error {
	if name == Offline {
		return nil
	}
	provider, model, ok := strings.Cut(name, ":")
	if !ok {
		if aliasOK && strings.TrimSpace(name) != "" && !strings.ContainsAny(name, " \t") {
			return nil
		}
		if full := modelname.Qualify(name); full != "" {
			return fmt.Errorf("%q is not a model name: it names no provider; did you mean %s? (%s)", name, full, howTo)
		}
		return fmt.Errorf("%q is not a model name; %s", name, howTo)
	}
	if model == "" {
		return fmt.Errorf("%q names no model; %s", name, howTo)
	}
	if !slices.Contains(providerNames, provider) {
		return fmt.Errorf("%q: unknown provider %q; %s", name, provider, howTo)
	}
	return nil
}

// check looks at the merged config: aliases used must exist.
func (c *Config) check() error {
	aliases := c.aliases()
	if c.Model != "" && !strings.Contains(c.Model, ":") && c.Model != Offline {
		if _, ok := aliases[c.Model]; !ok {
			return fmt.Errorf("%w: %s: model: %q is neither provider:model nor an alias (the aliases are: %s)",
				ErrConfig, c.ModelFrom, c.Model, strings.Join(sortedKeys(aliases), ", "))
		}
	}
	return nil
}

func (c *Config) merge(o *Config) {
	if o.Model != "" {
		c.Model, c.ModelFrom = o.Model, o.ModelFrom
	}
	c.Aliases = mergeMap(c.Aliases, o.Aliases)
	c.Prices = mergeMap(c.Prices, o.Prices)
	c.OutputLimits = mergeMap(c.OutputLimits, o.OutputLimits)
	for _, name := range providerNames {
		dst, src := c.Providers.get(name), o.Providers.get(name)
		if src.BaseURL != "" {
			dst.BaseURL = src.BaseURL
		}
		if src.Host != "" {
			dst.Host = src.Host
		}
		if src.APIKey != "" || src.APIKeyEnv != "" {
			dst.APIKey, dst.APIKeyEnv = src.APIKey, src.APIKeyEnv
		}
		if src.Model != "" {
			dst.Model = src.Model
		}
	}
	if o.Retry.Attempts != 0 {
		c.Retry.Attempts = o.Retry.Attempts
	}
	if o.Retry.MaxWait != 0 {
		c.Retry.MaxWait = o.Retry.MaxWait
	}
	if o.MaxResponseBytes != 0 {
		c.MaxResponseBytes = o.MaxResponseBytes
	}
}

func mergeMap[V any](dst, src map[string]V) map[string]V {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = make(map[string]V, len(src))
	}
	for k, v := range src {
		dst[k] = v
	}
	return dst
}

// BuiltinAliases are the aliases every config starts with: the short names
// an agent definition may use (modelname.Aliases: sonnet, opus,
// haiku), so that a name means one model in a file and on the command
// line, and mini.
var BuiltinAliases = func() map[string]string {
	aliases := modelname.Aliases()
	aliases["mini"] = "openai:gpt-4o-mini"
	return aliases
}()

// aliases returns the builtin aliases overridden by the config's.
func (c *Config) aliases() map[string]string {
	out := make(map[string]string, len(BuiltinAliases)+len(c.Aliases))
	for k, v := range BuiltinAliases {
		out[k] = v
	}
	for k, v := range c.Aliases {
		out[k] = v
	}
	return out
}

// price returns the price of a full model name, looking also under the
// aliases that name it.
func (c *Config) price(full string) (Price, bool) {
	if c == nil {
		return Price{}, false
	}
	if p, ok := c.Prices[full]; ok {
		return p, true
	}
	aliases := c.aliases()
	for k, p := range c.Prices {
		if aliases[k] == full {
			return p, true
		}
	}
	return Price{}, false
}

func (c *Config) outputLimit(full string) (int, bool) {
	if c == nil {
		return 0, false
	}
	if n, ok := c.OutputLimits[full]; ok {
		return n, true
	}
	aliases := c.aliases()
	for k, n := range c.OutputLimits {
		if aliases[k] == full {
			return n, true
		}
	}
	return 0, false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// keyLine is the line of a top-level key of a mapping node; 0 when it
// has none.
func keyLine(n *yaml.Node, key string) int {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i].Line
		}
	}
	return 0
}

// lineOf finds the line of a key path in a mapping node.
func lineOf(n *yaml.Node, path ...string) int {
	line := n.Line
	for _, p := range path {
		if n.Kind != yaml.MappingNode {
			return line
		}
		found := false
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == p {
				line = n.Content[i].Line
				n = n.Content[i+1]
				found = true
				break
			}
		}
		if !found {
			return line
		}
	}
	return line
}
