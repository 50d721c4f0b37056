package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// otlpHTTPClient is the client of signal's HTTP exporter. The
// exporter's own would share a transport with every other exporter of
// the process, whose idle connections outlive them all; this one's are
// closed at shutdown. Given a client, the exporter no longer reads the
// timeout and certificate variables, so they are read here as it would.
func (t *telemetry) otlpHTTPClient(vars map[string]string, signal string) *http.Client {
	transport := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		TLSClientConfig:       otlpTLS(vars, signal),
	}
	t.closeIdle = append(t.closeIdle, transport.CloseIdleConnections)
	return &http.Client{Transport: transport, Timeout: otlpTimeout(vars, signal)}
}

// otlpTimeout is how long an export of signal may take: its own
// variable's, else the general one's, else 10 seconds.
func otlpTimeout(vars map[string]string, signal string) time.Duration {
	timeout := otlpDefaultTimeout
	for _, prefix := range otlpPrefixes(signal) {
		if ms, err := strconv.Atoi(vars[prefix+"TIMEOUT"]); err == nil {
			timeout = time.Duration(ms) * time.Millisecond
		}
	}
	return timeout
}

// otlpTLS is the TLS configuration of signal's exporter: the
// collector's certificate to trust and the client's to show, as the
// certificate variables have them, a signal's own over the general
// ones; nil when none is set. A file that cannot be read is left out,
// as the exporters leave it out (logging that they did, which is said).
func otlpTLS(vars map[string]string, signal string) *tls.Config {
	var cfg tls.Config
	for _, prefix := range otlpPrefixes(signal) {
		if file, set := vars[prefix+"CERTIFICATE"]; set {
			certs, err := readCredential(file)
			if pool := x509.NewCertPool(); err == nil && pool.AppendCertsFromPEM(certs) {
				cfg.RootCAs = pool
			}
		}
		certFile, certSet := vars[prefix+"CLIENT_CERTIFICATE"]
		keyFile, keySet := vars[prefix+"CLIENT_KEY"]
		if certSet && keySet {
			cert, certErr := readCredential(certFile)
			key, keyErr := readCredential(keyFile)
			if pair, err := tls.X509KeyPair(cert, key); certErr == nil && keyErr == nil && err == nil {
				cfg.Certificates = []tls.Certificate{pair}
			}
		}
	}
	if cfg.RootCAs == nil && cfg.Certificates == nil {
		return nil
	}
	return &cfg
}

// otlpPrefixes are the prefixes of the OTLP exporter variables of
// signal, the general ones first, as a signal's own win.
func otlpPrefixes(signal string) []string {
	return []string{"OTEL_EXPORTER_OTLP_", "OTEL_EXPORTER_OTLP_" + strings.ToUpper(signal) + "_"}
}

// readCredential reads a certificate or key file, refusing one larger
// than any such file is.
func readCredential(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, credentialMax+1))
	if err == nil && len(b) > credentialMax {
		err = fmt.Errorf("larger than %d bytes", credentialMax)
	}
	return b, err
}

// Of the OTLP exporter variables read here: the specification's default
// timeout, and the most read of a certificate or key file (a chain of
// a few certificates is a few kilobytes).
const (
	otlpDefaultTimeout = 10 * time.Second
	credentialMax      = 1 << 20
)

// destination is where a signal's exports go: the endpoint variable
// that names it, or the specification's default.
type destination struct {
	signal      string // signalTraces or signalMetrics
	endpointVar string // "" for the default endpoint
	defaultPort string // the default endpoint's, by protocol
}

// newDestination is where the exporter of signal, over protocol, sends
// as vars have it: to the signal's own endpoint variable, else the
// general one, else the default. A variable that is not a URL is left
// out, as the exporters leave it out.
func newDestination(vars map[string]string, signal, protocol string) destination {
	d := destination{signal: signal, defaultPort: "4318"}
	if protocol == protocolGRPC {
		d.defaultPort = "4317"
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_" + strings.ToUpper(signal) + "_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
		if v, set := vars[name]; set && endpointProblem(v) == "" {
			d.endpointVar = name
			break
		}
	}
	return d
}

// whereTo says where the exports of the signal that failed went, and
// where the other signal's go when that is elsewhere: an endpoint
// variable set for traces alone leaves the metrics at the default.
func (t *telemetry) whereTo(failed string) string {
	var at destination
	for _, d := range t.destinations {
		if d.signal == failed {
			at = d
		}
	}
	says := "is the collector at " + at.endpointVar + " running?"
	if at.endpointVar == "" {
		says = at.goesTo() + ": is a collector running there?"
	}
	for _, d := range t.destinations {
		if d.signal != failed && (d.endpointVar != at.endpointVar || d.endpointVar == "" && d.defaultPort != at.defaultPort) {
			says += " " + d.goesTo()
		}
	}
	return says
}

func (d destination) goesTo() string {
	if d.endpointVar != "" {
		return d.signal + " go to " + d.endpointVar
	}
	return fmt.Sprintf("%s go to the default endpoint, localhost:%s, as neither OTEL_EXPORTER_OTLP_ENDPOINT nor OTEL_EXPORTER_OTLP_%s_ENDPOINT is set",
		d.signal, d.defaultPort, strings.ToUpper(d.signal))
}

// checkExporterVars warns of each OTLP exporter variable, general or of
// a signal wanted, that the exporters cannot read: they would log its
// value (a header's credentials and all) and go on without it. The
// warning names the variable and never shows its value.
func (t *telemetry) checkExporterVars(vars map[string]string, traces, metrics bool) {
	prefixes := []string{"OTEL_EXPORTER_OTLP_"}
	if traces {
		prefixes = append(prefixes, "OTEL_EXPORTER_OTLP_TRACES_")
	}
	if metrics {
		prefixes = append(prefixes, "OTEL_EXPORTER_OTLP_METRICS_")
	}
	for _, prefix := range prefixes {
		for _, c := range exporterVarChecks {
			v, set := vars[prefix+c.suffix]
			if !set {
				continue
			}
			if problem := c.problem(v); problem != "" {
				t.warnf("%s%s: %s (its value is not shown); %s; the exporters go on without it", prefix, c.suffix, problem, c.advice)
			}
		}
	}
}

// exporterVarChecks are the OTLP exporter variables whose value the
// exporters log when they cannot read it: what is wrong with a value
// ("" for nothing), and how to write it.
var exporterVarChecks = []struct {
	suffix  string
	problem func(string) string
	advice  string
}{
	{"ENDPOINT", endpointProblem, "write it as http://host:port"},
	{"HEADERS", headersProblem, "write it as name=value pairs, comma-separated, %-escaping what needs it"},
	{"TIMEOUT", timeoutProblem, "write 10 s as 10000"},
}

func endpointProblem(v string) string {
	if _, err := url.Parse(v); err != nil {
		return "not a URL"
	}
	return ""
}

func timeoutProblem(v string) string {
	if _, err := strconv.Atoi(v); err != nil {
		return "not a whole number of milliseconds"
	}
	return ""
}

// headersProblem reads v as the exporters do: name=value pairs,
// comma-separated, each name a header's and each value %-escaped.
func headersProblem(v string) string {
	pairs := strings.Split(v, ",")
	for i, pair := range pairs {
		name, value, ok := strings.Cut(pair, "=")
		switch {
		case !ok:
			return fmt.Sprintf("pair %d of %d has no \"=\"", i+1, len(pairs))
		case !isHeaderName(strings.TrimSpace(name)):
			return fmt.Sprintf("the name of pair %d of %d is not a header's", i+1, len(pairs))
		}
		if _, err := url.PathUnescape(value); err != nil {
			return fmt.Sprintf("the value of pair %d of %d has a %% that is not an escape such as %%20", i+1, len(pairs))
		}
	}
	return ""
}

// isHeaderName reports whether s is an HTTP header's name: a token of
// RFC 9110.
func isHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		isLetterOrDigit := r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r))
		if !isLetterOrDigit && !strings.ContainsRune("!#$%&'*+-.^_`|~", r) {
			return false
		}
	}
	return true
}
