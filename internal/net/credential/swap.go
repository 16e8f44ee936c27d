package credential

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/net/netrule"
)

// Binding is one credential as the proxy uses it: the secret and its
// placeholder, the hosts it belongs to, and the headers, methods and
// path prefixes it may be used in.
type Binding struct {
	// Name names the credential in decisions and the audit log.
	Name string
	// Hosts decides which hosts the credential belongs to: a host its
	// allow entries match (netrule's matching).
	Hosts *netrule.Set
	// Placeholder is what the command holds; Secret what the host gets.
	Placeholder, Secret string
	// Headers are the headers, besides Authorization, it may be put in.
	Headers []string
	// Methods and Paths, when set, limit the requests it is used in.
	Methods, Paths []string
}

// For says whether the credential belongs to host t on port.
func (b *Binding) For(t netrule.Target, port int) bool {
	return b.Hosts != nil && t.Name != "" && b.Hosts.DecideName(t, port).Allowed
}

// headers are the header names the placeholder is replaced in.
func (b *Binding) headers() []string {
	out := []string{"Authorization"}
	for _, h := range b.Headers {
		out = append(out, http.CanonicalHeaderKey(h))
	}
	return out
}

// Use is what one request did with one credential: its placeholder was
// found in an allowed header, and the secret put in its place (Allowed),
// or the request refused by Rule. It never holds a value.
type Use struct {
	Credential string
	Allowed    bool
	// Rule names what refused it ("" when allowed).
	Rule string
	// Reason is one sentence for the command: why.
	Reason string
}

// Apply puts the secrets of bindings (those bound to the request's
// host) in place of their placeholders in the allowed headers of a
// request (method, the path of its URL as decoded and escaped, header):
// in Authorization (also inside HTTP Basic's base64 user:password) and
// in each binding's Headers, never in another header, the URL or the
// body. A binding whose placeholder appears there but whose Methods or
// Paths refuse the request refuses it: Apply then changes nothing and
// returns the refusal first. It returns one Use per binding whose
// placeholder it found.
func Apply(bindings []*Binding, method, decodedPath, escapedPath string, header http.Header) []Use {
	type hit struct {
		b    *Binding
		name string
		i    int
	}
	var hits []hit
	var uses []Use
	var refused []Use
	for _, b := range bindings {
		found := false
		for _, name := range b.headers() {
			for i, v := range header[name] {
				if strings.Contains(v, b.Placeholder) || name == "Authorization" && basicHas(v, b.Placeholder) {
					hits = append(hits, hit{b, name, i})
					found = true
				}
			}
		}
		if !found {
			continue
		}
		u := b.decide(method, decodedPath, escapedPath)
		if u.Allowed && len(b.Methods) > 0 {
			// A header that asks the server to take the request as
			// another method would pass the methods rule by its name.
			for _, h := range []string{"X-Http-Method-Override", "X-Http-Method", "X-Method-Override"} {
				if _, ok := header[h]; ok {
					u.Allowed = false
					u.Rule = fmt.Sprintf("credential %s: methods %s", b.Name, strings.Join(b.Methods, ", "))
					u.Reason = fmt.Sprintf("the credential %s is not used in a request with %s (a method override)", b.Name, h)
				}
			}
		}
		if !u.Allowed {
			refused = append(refused, u)
		} else {
			uses = append(uses, u)
		}
	}
	if len(refused) > 0 {
		return append(refused, uses...)
	}
	for _, h := range hits {
		v := header[h.name][h.i]
		if h.name == "Authorization" {
			v = swapBasic(v, h.b.Placeholder, h.b.Secret)
		}
		header[h.name][h.i] = strings.ReplaceAll(v, h.b.Placeholder, h.b.Secret)
	}
	return uses
}

// decide applies the binding's method and path rules to a request.
func (b *Binding) decide(method, decodedPath, escapedPath string) Use {
	u := Use{Credential: b.Name, Allowed: true}
	if len(b.Methods) > 0 && !slices.Contains(b.Methods, method) {
		u.Allowed = false
		u.Rule = fmt.Sprintf("credential %s: methods %s", b.Name, strings.Join(b.Methods, ", "))
		u.Reason = fmt.Sprintf("the credential %s is not used in a %s request; its methods are %s", b.Name, method, strings.Join(b.Methods, ", "))
		return u
	}
	if len(b.Paths) == 0 {
		return u
	}
	rule := fmt.Sprintf("credential %s: paths %s", b.Name, strings.Join(b.Paths, ", "))
	if !canonicalPath(decodedPath, escapedPath) {
		u.Allowed, u.Rule = false, rule
		u.Reason = fmt.Sprintf("the credential %s is used only on its paths, and this request's path is not in plain form (dot segments, an empty segment or an escaped / . or \\)", b.Name)
		return u
	}
	for _, p := range b.Paths {
		if pathUnder(decodedPath, p) {
			return u
		}
	}
	u.Allowed, u.Rule = false, rule
	u.Reason = fmt.Sprintf("the credential %s is not used for this path; its paths are %s", b.Name, strings.Join(b.Paths, ", "))
	return u
}

// canonicalPath says whether a request path means one thing to every
// server: no dot segment, no empty segment, no backslash or ';', and no
// escaped '/', '.', '\', ';' or '%' that a server might decode after the
// check.
func canonicalPath(decoded, escaped string) bool {
	if decoded == "" || decoded[0] != '/' || strings.ContainsAny(decoded, "\\;") {
		return false // a backslash; a ';' (path parameters: "/..;/" is ".." to some servers)
	}
	trimmed := strings.TrimSuffix(decoded, "/")
	if trimmed != "" && path.Clean(trimmed) != trimmed {
		return false
	}
	low := strings.ToLower(escaped)
	for _, e := range []string{"%2f", "%2e", "%5c", "%25", "%3b"} { // %25: escaped twice
		if strings.Contains(low, e) {
			return false
		}
	}
	return true
}

// pathUnder says whether p is prefix or lies below it: "/v1/" and "/v1"
// both take "/v1/x"; "/v1" does not take "/v1x".
func pathUnder(p, prefix string) bool {
	if strings.HasSuffix(prefix, "/") {
		return strings.HasPrefix(p, prefix) || p == strings.TrimSuffix(prefix, "/")
	}
	return p == prefix || strings.HasPrefix(p, prefix+"/")
}

// basicHas says whether an Authorization value is HTTP Basic whose
// user:password holds placeholder.
func basicHas(v, placeholder string) bool {
	raw, ok := basicDecode(v)
	return ok && strings.Contains(raw, placeholder)
}

// swapBasic replaces placeholder by secret inside an HTTP Basic value's
// user:password, encoding it again; other values are returned as they
// are.
func swapBasic(v, placeholder, secret string) string {
	raw, ok := basicDecode(v)
	if !ok || !strings.Contains(raw, placeholder) {
		return v
	}
	scheme, _, _ := strings.Cut(strings.TrimSpace(v), " ")
	return scheme + " " + base64.StdEncoding.EncodeToString([]byte(strings.ReplaceAll(raw, placeholder, secret)))
}

// basicDecode returns the user:password of an HTTP Basic value.
func basicDecode(v string) (string, bool) {
	scheme, enc, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return "", false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
	if err != nil {
		return "", false
	}
	return string(raw), true
}
