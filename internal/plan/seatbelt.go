package plan

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/enforce/limits"
	"github.com/cordon-sandbox/cordon/internal/plan/sbpl"
	"github.com/cordon-sandbox/cordon/policy"
)

// SandboxExec is macOS's sandbox-exec, which the Seatbelt plan runs.
const SandboxExec = "/usr/bin/sandbox-exec"

// SeatbeltPlan is the Seatbelt part of a plan: the profile and the
// parameters it names, which Argv passes as sandbox-exec -p PROFILE
// -D NAME=VALUE ....
type SeatbeltPlan struct {
	// Profile is the SBPL profile. It holds no path: every path is a
	// parameter.
	Profile string `json:"profile"`
	// Params are the profile's parameters, in Argv's order.
	Params []sbpl.Param `json:"params"`
	// Tag is the message every deny rule carries, "cordon-RUNID": the
	// kernel logs it after each denial, and the violation monitor reads
	// this run's denials by it (log stream --predicate 'eventMessage
	// ENDSWITH "cordon-RUNID"': package seatbeltlog).
	Tag string `json:"tag"`
}

// seatbeltSystemReads are the directories, besides the policy's read
// paths, that programs need to run on macOS:
//
//   - /usr, /bin, /sbin: programs and libraries (/usr/lib, /usr/share);
//   - /System: the frameworks and, since macOS 11, the dyld shared cache
//     (/System/Library/dyld, /System/Volumes/Preboot/Cryptexes);
//   - /Library: system-wide frameworks and the Command Line Tools
//     (/Library/Developer), installed preferences and certificates;
//   - /private/etc: /etc's real path (hosts, resolv.conf, passwd, ssl);
//   - /private/var/db/timezone: /etc/localtime points there;
//   - /private/var/select: xcode-select's choice of developer directory.
//
// The home directory's ~/Library is not among them.
var seatbeltSystemReads = []string{"/usr", "/bin", "/sbin", "/System", "/Library", "/private/etc", "/private/var/db/timezone", "/private/var/select"}

// seatbeltDevices are the devices the command may read and write (and use
// ioctl on). Its terminal, inherited as a descriptor, needs no rule.
var seatbeltDevices = []string{"/dev/null", "/dev/zero", "/dev/tty", "/dev/random", "/dev/urandom", "/dev/dtracehelper", "/dev/ptmx"}

// seatbeltMach are the Mach services the command may look up, each with
// why; every other lookup is denied.
var seatbeltMach = []struct{ name, why string }{
	{"com.apple.system.opendirectoryd.libinfo", "getpwuid, getgrgid: user and group names (id, ls -l, git, ssh)"},
	{"com.apple.system.notification_center", "notify(3): libc's notifications (time zone, configuration changes)"},
	{"com.apple.SecurityServer", "Security.framework: keychain-backed TLS trust settings (curl, git over https)"},
	{"com.apple.trustd.agent", "certificate trust evaluation for TLS"},
	{"com.apple.coreservices.launchservicesd", "LaunchServices: tools that ask for a file's type or default application"},
}

// seatbeltDNS is the Mach service of mDNSResponder, getaddrinfo's resolver
// on macOS: looked up only when the network is open.
const seatbeltDNS = "com.apple.dnssd.service"

// firmlinks are the top-level symbolic links of macOS, whose real paths,
// which Seatbelt matches, are below /private.
var firmlinks = []string{"/etc", "/tmp", "/var"}

// macPaths returns path and, when it lies below one of firmlinks, its real
// path below /private too.
func macPaths(path string) []string {
	for _, f := range firmlinks {
		if policy.Within(path, f) {
			return []string{path, "/private" + path}
		}
	}
	return []string{path}
}

// buildSeatbelt plans a run of the command under macOS's sandbox-exec
// with a profile generated from the policy (see writeSeatbelt). It can be
// built anywhere; only macOS can run it (launch refuses elsewhere).
func buildSeatbelt(p *policy.Policy, command []string, opts Options) (*Plan, error) {
	if strings.HasPrefix(command[0], "-") {
		return nil, fmt.Errorf("the command %q starts with '-', which sandbox-exec would take as its own option", command[0])
	}
	mode, _ := netMode(p)
	n, err := planNet(p, false, "")
	if err != nil {
		return nil, err
	}
	tmp, err := privateTmpDir(opts.StateDir)
	if err != nil {
		return nil, err
	}
	if n != nil && len(n.Credentials) > 0 {
		n.CABundle = filepath.Join(tmp, CABundleName)
	}
	runID := opts.RunID
	if runID == "" {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("naming the run: %w", err)
		}
		runID = hex.EncodeToString(b[:])
	}
	pl := &Plan{
		Backend:     backend.Seatbelt,
		Command:     command,
		Interactive: opts.Interactive,
		PrivateTmp:  tmp,
		StateDir:    opts.StateDir,
		Workspace:   p.Workspace,
		Strict:      p.Mode == policy.ModeStrict,
		Timeout:     p.Timeout,
		Limits:      limits.Limits{MaxProcesses: p.Resources.MaxProcesses, MaxMemoryMB: p.Resources.MaxMemoryMB, MaxCPUSeconds: p.Resources.MaxCPUSeconds},
	}
	pl.Spec.Rlimits = buildSpec(p).Rlimits
	sb := &seatbelt{p: p, opts: opts, pl: pl, tmp: tmp, mode: mode}
	prof := sbpl.New("cordon-" + runID)
	sb.write(prof)
	text, err := prof.Text()
	if err != nil {
		return nil, fmt.Errorf("writing the Seatbelt profile: %w", err)
	}
	if err := sbpl.Check(text); err != nil {
		return nil, fmt.Errorf("the Seatbelt profile written is not well-formed: %w", err)
	}
	pl.Seatbelt = &SeatbeltPlan{Profile: text, Params: prof.Params(), Tag: "cordon-" + runID}
	pl.Argv = seatbeltArgv(pl.Seatbelt, command)
	if mode == policy.NetFiltered {
		// The launcher listens for the proxies on the host's 127.0.0.1
		// and runs the profile SeatbeltWithProxy adds their two ports
		// to: until then this profile allows no TCP port of the
		// loopback but the forwarded ones. Not degraded, so strict mode
		// accepts it: the command reaches only the proxy's two ports and
		// the forwarded ports, on the loopback, as under bubblewrap.
		n.Seatbelt = true
		pl.Net = n
	}
	if mode == policy.NetLoopback {
		pl.Degraded = append(pl.Degraded, "loopback network on Seatbelt: there is no private loopback; the command may listen on the host's loopback (other local users and programs can connect) and connects only to the forwarded ports")
	}
	var dropped []string
	pl.Env, dropped = buildEnvTmp(p, opts, tmp)
	pl.RunNotes = append(pl.RunNotes, dropped...)
	pl.Notes = append(pl.Notes, sb.notes...)
	pl.Notes = append(pl.Notes, "Seatbelt keeps protected paths read-only itself: nothing is checked after the run, and there are no placeholders")
	pl.Dir = p.Workspace
	if c := opts.Cwd; c != "" && (policy.CoveredBy(c, sb.reads) || policy.CoveredBy(c, sb.writes)) && policy.DeniedBy(p.Deny, c) == "" {
		pl.Dir = c
	}
	return pl, nil
}

// seatbeltArgv is sandbox-exec -p PROFILE -D NAME=VALUE ... command.
func seatbeltArgv(sb *SeatbeltPlan, command []string) []string {
	argv := []string{SandboxExec, "-p", sb.Profile}
	for _, prm := range sb.Params {
		argv = append(argv, "-D", prm.Name+"="+prm.Value)
	}
	return append(argv, command...)
}

// SeatbeltProxyProfile returns the profile of the Seatbelt plan pl, whose
// network is filtered, with network-outbound allowed to the host's
// loopback at httpPort and socksPort, where the launcher listens for the
// proxies (ports it chose, known only once it listens, after the plan was
// built): to those two ports and to nothing else that the plan's profile
// does not allow already (with a filtered network, only the forwarded
// ports of the loopback; see seatbelt.network).
//
// Ordering. SBPL is last-match-wins, and the rule is appended at the
// end of the profile (sbpl.Continue), after every rule of the plan's:
// nothing can override it, and it overrides, for connections to those two
// ports of the loopback only, the profile's (deny default), which is the
// only rule of the plan's profile that denies a network operation
// (TestSeatbeltProxyProfile checks that none other does, lest the
// appended allow cut into it). The rules after the network section
// (cordon's state directory, secrets, protected paths) name file
// operations, which the appended rule does not: its place at the end
// changes nothing for them. The ports are integers; no path or string of
// the command goes into the profile.
func SeatbeltProxyProfile(pl *Plan, httpPort, socksPort int) (string, error) {
	if pl.Backend != backend.Seatbelt || pl.Seatbelt == nil {
		return "", fmt.Errorf("plan: the proxy's ports go into a Seatbelt plan's profile, and this is a %s plan", pl.Backend)
	}
	if !pl.Net.Filtered() {
		return "", fmt.Errorf("plan: the proxy's ports go into the profile of a filtered network only")
	}
	if httpPort == socksPort {
		return "", fmt.Errorf("plan: the HTTP and SOCKS5 proxies on one port (%d)", httpPort)
	}
	sb := pl.Seatbelt
	prof, err := sbpl.Continue(sb.Profile, sb.Tag, sb.Params)
	if err != nil {
		return "", fmt.Errorf("adding the proxy's ports to the Seatbelt profile: %w", err)
	}
	prof.Comment("network: cordon's HTTP and SOCKS5 proxies on the host's loopback, their ports chosen at launch; last, so that no rule overrides it")
	prof.Allow([]sbpl.Op{sbpl.OpNetworkOutbound}, sbpl.RemoteIP(fmt.Sprintf("localhost:%d", httpPort)), sbpl.RemoteIP(fmt.Sprintf("localhost:%d", socksPort)))
	text, err := prof.Text()
	if err != nil {
		return "", fmt.Errorf("adding the proxy's ports to the Seatbelt profile: %w", err)
	}
	if len(prof.Params()) != len(sb.Params) {
		return "", fmt.Errorf("plan: adding the proxy's ports added parameters to the Seatbelt profile")
	}
	if err := sbpl.Check(text); err != nil {
		return "", fmt.Errorf("the Seatbelt profile with the proxy's ports is not well-formed: %w", err)
	}
	return text, nil
}

// SeatbeltWithProxy returns a copy of the Seatbelt plan pl, whose network
// is filtered and whose Net holds the ports the launcher listens on for
// the proxies (HTTPPort, SOCKSPort), with the profile of
// SeatbeltProxyProfile and the Argv that runs it. pl is not changed.
func SeatbeltWithProxy(pl *Plan) (*Plan, error) {
	if !pl.Net.Filtered() || !pl.Net.HostListen || !pl.Net.Seatbelt {
		return nil, fmt.Errorf("plan: not a Seatbelt plan with a filtered network served on the host")
	}
	text, err := SeatbeltProxyProfile(pl, pl.Net.HTTPPort, pl.Net.SOCKSPort)
	if err != nil {
		return nil, err
	}
	out := *pl
	sb := *pl.Seatbelt
	sb.Profile = text
	out.Seatbelt = &sb
	out.Argv = seatbeltArgv(&sb, pl.Command)
	return &out, nil
}

// seatbelt writes one plan's profile.
type seatbelt struct {
	p      *policy.Policy
	opts   Options
	pl     *Plan
	tmp    string
	mode   policy.NetMode
	reads  []string // read roots, the system's included
	writes []string // write roots but the private temporary directory
	notes  []string
}

// fileOps are every file operation: what a denied path loses.
var fileOps = []sbpl.Op{sbpl.OpFileRead, sbpl.OpFileWrite, sbpl.OpFileMapExecutable}

// write writes the profile. SBPL is last-match-wins: of the rules that
// match an operation, the last one decides. So the rules come in this
// order, from broad to narrow:
//
//  1. (deny default): what no later rule allows is denied.
//  2. Processes, Mach services, sysctl, shared memory: allowed, signals
//     and process information only within this sandbox.
//  3. Reads: the system directories, the read and write paths, and the
//     metadata (not the contents) of their ancestors.
//  4. Writes: the write paths and the devices.
//  5. Network, as the policy's mode says. No rule denies a network
//     operation but (deny default).
//  6. cordon's state directory denied, then the private temporary
//     directory inside it allowed again.
//  7. Denies, after every allow they cut into: the secrets (deny paths,
//     deny globs, for reads and writes), then the protected paths and
//     deny_write paths (writes), then the ancestors of protected paths
//     pinned (no rename or removal), so that .git cannot be moved aside
//     and replaced.
//  8. With a filtered network, added at launch after all of these
//     (SeatbeltProxyProfile): connecting to the proxy's two ports on the
//     loopback.
//
// Every path is a parameter: (param "R0") in the profile, -D R0=PATH on
// the command line.
func (s *seatbelt) write(prof *sbpl.Profile) {
	p := s.p
	prof.Comment("cordon's Seatbelt profile. Last match wins: allows first, denies after them.")
	prof.Deny([]sbpl.Op{sbpl.OpDefault})

	prof.Comment("processes: exec and fork; signals and process information only within this sandbox")
	prof.Allow([]sbpl.Op{sbpl.OpProcessExec, sbpl.OpProcessFork})
	prof.Allow([]sbpl.Op{sbpl.OpSignal, sbpl.OpProcessInfo}, sbpl.Target("same-sandbox"))
	prof.Allow([]sbpl.Op{sbpl.OpSysctlRead, sbpl.OpIPCPosixSem, sbpl.OpIPCPosixShm, sbpl.OpPseudoTTY})
	for _, m := range seatbeltMach {
		prof.Comment(m.name + ": " + m.why)
		prof.Allow([]sbpl.Op{sbpl.OpMachLookup}, sbpl.GlobalName(m.name))
	}
	if s.mode == policy.NetOpen {
		prof.Comment(seatbeltDNS + ": name resolution (mDNSResponder), with the network open")
		prof.Allow([]sbpl.Op{sbpl.OpMachLookup}, sbpl.GlobalName(seatbeltDNS))
	}

	for _, w := range p.Write {
		if w == privateTmp || policy.DeniedBy(p.Deny, w) != "" {
			continue
		}
		s.writes = appendNew(s.writes, macPaths(w)...)
	}
	s.reads = slices.Clone(seatbeltSystemReads)
	for _, r := range p.Read {
		if r != privateTmp && policy.DeniedBy(p.Deny, r) == "" {
			s.reads = appendNew(s.reads, macPaths(r)...)
		}
	}
	if p.Repo != nil {
		s.reads = appendNew(s.reads, p.Repo.Read...)
	}
	all := slices.Concat(s.reads, s.writes)

	prof.Comment("reads: system directories, read and write paths; the metadata of their ancestors")
	prof.Allow([]sbpl.Op{sbpl.OpFileRead, sbpl.OpFileMapExecutable}, s.subpaths(prof, "R", s.reads)...)
	if len(s.writes) > 0 {
		prof.Allow([]sbpl.Op{sbpl.OpFileRead, sbpl.OpFileMapExecutable}, s.subpaths(prof, "W", s.writes)...)
	}
	var anc []string
	for _, r := range all {
		for d := filepath.Dir(r); ; d = filepath.Dir(d) {
			anc = appendNew(anc, d)
			if d == "/" {
				break
			}
		}
	}
	prof.Allow([]sbpl.Op{sbpl.OpFileReadMetadata}, s.literals(prof, "A", anc)...)

	prof.Comment("writes: the write paths; devices")
	if len(s.writes) > 0 {
		prof.Allow([]sbpl.Op{sbpl.OpFileWrite}, s.subpaths(prof, "W", s.writes)...)
	}
	prof.Allow([]sbpl.Op{sbpl.OpFileRead, sbpl.OpFileWrite, sbpl.OpFileIoctl}, s.literals(prof, "DEV", seatbeltDevices)...)

	s.network(prof)

	if st := s.opts.StateDir; st != "" {
		prof.Comment("cordon's state directory is out of reach; the run's temporary directory inside it is not")
		prof.Deny(fileOps, sbpl.Subpath(prof.Param("S", st)))
	}
	prof.Allow([]sbpl.Op{sbpl.OpFileRead, sbpl.OpFileWrite, sbpl.OpFileMapExecutable}, sbpl.Subpath(prof.Param("T", s.tmp)))

	s.secrets(prof, all)
	s.protected(prof)
}

// network writes the network rules: none when it is denied (deny
// default), all when open; in loopback mode, listening on the host's
// loopback and connecting to the forwarded ports there; in filtered mode,
// connecting to the forwarded ports (and, added at launch by
// SeatbeltProxyProfile, to the proxy's two ports).
func (s *seatbelt) network(prof *sbpl.Profile) {
	switch s.mode {
	case policy.NetOpen:
		prof.Comment("network: open")
		prof.Allow([]sbpl.Op{sbpl.OpNetwork, sbpl.OpSystemSocket})
	case policy.NetFiltered:
		prof.Comment("network: filtered, through cordon's proxies on the host's loopback: their two ports, chosen at launch, are allowed by a rule added at the end of this profile; here, the forwarded ports")
		s.forwarded(prof)
	case policy.NetLoopback:
		prof.Comment("network: loopback; listen there, connect to the forwarded ports")
		prof.Allow([]sbpl.Op{sbpl.OpNetworkBind, sbpl.OpNetworkInbound}, sbpl.LocalIP("localhost:*"))
		s.forwarded(prof)
	default:
		prof.Comment("network: denied (no rule allows it)")
		s.forwarded(prof)
	}
	if len(s.p.UnixSockets) > 0 {
		prof.Comment("unix sockets the policy allows, by exact path")
		var fs []sbpl.Filter
		for _, u := range s.p.UnixSockets {
			for _, m := range macPaths(u) {
				fs = append(fs, sbpl.RemoteUnixSocket(prof.Param("U", m)))
			}
		}
		prof.Allow([]sbpl.Op{sbpl.OpNetworkOutbound}, fs...)
	}
}

// forwarded allows connecting to each forwarded port of the host's
// loopback, where the service the user forwarded listens: the command
// reaches it directly, without the proxy.
func (s *seatbelt) forwarded(prof *sbpl.Profile) {
	for _, port := range slices.Concat(s.p.Network.ForwardPorts, s.p.Network.AllowForwards) {
		prof.Allow([]sbpl.Op{sbpl.OpNetworkOutbound}, sbpl.RemoteIP(fmt.Sprintf("localhost:%d", port)))
	}
}

// secrets writes the denies of the policy's deny entries, for reads and
// writes: literal paths as subpaths, absolute globs as a regex below
// their literal directory, relative globs as regexes below the roots they
// are searched in (policy.Policy.DenyGlobReadRoots and the write paths),
// but not in the system directories and tool caches the policy skips.
func (s *seatbelt) secrets(prof *sbpl.Profile, all []string) {
	p := s.p
	var lits []string
	var rel []string
	type absGlob struct{ root, re string }
	var abs []absGlob
	for _, d := range p.Deny {
		switch {
		case !filepath.IsAbs(d):
			rel = append(rel, d)
		case policy.IsGlob(d):
			root, pat := splitAbsGlob(d)
			re, err := sbpl.GlobRegex(pat, true)
			if err != nil {
				lits = appendNew(lits, macPaths(root)...) // fail closed
				continue
			}
			abs = append(abs, absGlob{root, re})
		default:
			lits = appendNew(lits, macPaths(d)...)
		}
	}
	if len(lits) > 0 {
		prof.Comment("secrets: the deny paths")
		prof.Deny(fileOps, s.subpaths(prof, "D", lits)...)
		s.pins(prof, lits)
	}
	for _, a := range abs {
		prof.Deny(fileOps, sbpl.RequireAll(s.anySubpath(prof, "D", macPaths(a.root)), sbpl.Regex(a.re)))
	}
	if len(rel) == 0 {
		return
	}
	roots := p.DenyGlobReadRoots(s.opts.Home)
	for _, w := range s.writes {
		if w != p.SandboxCache {
			roots = appendNew(roots, w)
		}
	}
	var res []sbpl.Filter
	var rxs []*regexp.Regexp
	for _, g := range rel {
		re, err := sbpl.GlobRegex(g, true)
		if err != nil {
			s.notes = append(s.notes, fmt.Sprintf("deny glob %s could not be written for Seatbelt (%v): it is not enforced", g, err))
			continue
		}
		res = append(res, sbpl.Regex(re))
		if rx, err := regexp.Compile(re); err == nil {
			rxs = append(rxs, rx)
		}
	}
	if len(res) == 0 || len(roots) == 0 {
		return
	}
	for _, r := range roots {
		for _, rx := range rxs {
			if rx.MatchString(r) {
				s.notes = append(s.notes, fmt.Sprintf("%s lies below a path a deny glob matches: the whole of it is denied on Seatbelt (its regex cannot start at the root)", r))
				break
			}
		}
	}
	filters := []sbpl.Filter{s.anySubpath(prof, "G", roots), sbpl.RequireAny(res...)}
	var skip []string
	for _, k := range policy.DenyGlobSkipped(s.opts.Home) {
		if policy.CoveredBy(k, roots) && !slices.Contains(roots, k) {
			skip = append(skip, k)
		}
	}
	if len(skip) > 0 {
		filters = append(filters, sbpl.RequireNot(s.anySubpath(prof, "K", skip)))
	}
	prof.Comment("secrets: the deny globs, below the trees they are searched in")
	prof.Deny(fileOps, sbpl.RequireAll(filters...))
}

// protected writes the denies of writes to the protected paths and the
// deny_write paths inside the write roots, and the pins of their
// ancestors.
func (s *seatbelt) protected(prof *sbpl.Profile) {
	p := s.p
	var roots []string
	for _, w := range s.writes {
		if w != p.SandboxCache {
			roots = append(roots, w)
		}
	}
	if len(roots) == 0 {
		return
	}
	var lits []string
	var globs []string
	for _, d := range p.DenyWrite {
		switch {
		case !filepath.IsAbs(d):
			globs = append(globs, d)
		case policy.IsGlob(d):
			root, _ := splitAbsGlob(d)
			if policy.CoveredBy(root, roots) {
				lits = appendNew(lits, root) // fail closed: the whole tree
			}
		case policy.CoveredBy(d, roots):
			lits = appendNew(lits, d)
		}
	}
	if len(lits) > 0 {
		prof.Comment("deny_write paths inside the write paths")
		prof.Deny([]sbpl.Op{sbpl.OpFileWrite}, s.subpaths(prof, "P", lits)...)
		s.pins(prof, lits)
	}
	var rules, pins, toolRules, toolPins []sbpl.Filter
	seen := map[string]bool{}
	for _, r := range append(slices.Clone(p.Protected), globs...) {
		dir := strings.HasSuffix(r, "/")
		re, err := sbpl.GlobRegex(r, dir)
		if err != nil {
			s.notes = append(s.notes, fmt.Sprintf("protected path %s could not be written for Seatbelt (%v): it is not enforced", r, err))
			continue
		}
		// A tool's file is not protected inside an installed package
		// (policy.ToolFileSkipDirs): those rules go apart.
		tool := strings.HasPrefix(r, "**/") && policy.ToolFileName(strings.TrimPrefix(r, "**/"))
		if tool {
			toolRules = append(toolRules, sbpl.Regex(re))
		} else {
			rules = append(rules, sbpl.Regex(re))
		}
		for _, a := range globAncestors(r) {
			if re, err := sbpl.GlobRegex(a, false); err == nil && !seen[re] {
				seen[re] = true
				if tool {
					toolPins = append(toolPins, sbpl.Regex(re))
				} else {
					pins = append(pins, sbpl.Regex(re))
				}
			}
		}
	}
	if len(toolRules) > 0 {
		skip := sbpl.RequireNot(sbpl.Regex("/(" + strings.Join(policy.ToolFileSkipDirs, "|") + ")/"))
		rules = append(rules, sbpl.RequireAll(sbpl.RequireAny(toolRules...), skip))
		if len(toolPins) > 0 {
			pins = append(pins, sbpl.RequireAll(sbpl.RequireAny(toolPins...), skip))
		}
	}
	if len(rules) > 0 {
		prof.Comment("protected paths, at any depth of the write paths: read-only")
		prof.Deny([]sbpl.Op{sbpl.OpFileWrite}, sbpl.RequireAll(s.anySubpath(prof, "W", roots), sbpl.RequireAny(rules...)))
	}
	if len(pins) > 0 {
		prof.Comment("their ancestors: not to be renamed or removed (a .git moved aside and replaced)")
		prof.Deny([]sbpl.Op{sbpl.OpFileWriteUnlink}, sbpl.RequireAll(s.anySubpath(prof, "W", roots), sbpl.RequireAny(pins...)))
	}
}

// pins denies renaming or removing the ancestors of each of paths below
// the write root it lies in (not the root itself), as literals.
func (s *seatbelt) pins(prof *sbpl.Profile, paths []string) {
	var anc []string
	for _, d := range paths {
		root := ""
		for _, w := range s.writes {
			if policy.Within(d, w) && len(w) > len(root) {
				root = w
			}
		}
		if root == "" || root == d {
			continue
		}
		for a := filepath.Dir(d); a != root && policy.Within(a, root); a = filepath.Dir(a) {
			anc = appendNew(anc, a)
		}
	}
	if len(anc) > 0 {
		prof.Deny([]sbpl.Op{sbpl.OpFileWriteUnlink}, s.literals(prof, "A", anc)...)
	}
}

// subpaths returns a subpath filter for each path, its parameter named
// with prefix.
func (s *seatbelt) subpaths(prof *sbpl.Profile, prefix string, paths []string) []sbpl.Filter {
	out := make([]sbpl.Filter, 0, len(paths))
	for _, x := range paths {
		out = append(out, sbpl.Subpath(prof.Param(prefix, x)))
	}
	return out
}

// literals is subpaths with literal filters.
func (s *seatbelt) literals(prof *sbpl.Profile, prefix string, paths []string) []sbpl.Filter {
	out := make([]sbpl.Filter, 0, len(paths))
	for _, x := range paths {
		out = append(out, sbpl.Literal(prof.Param(prefix, x)))
	}
	return out
}

// anySubpath is (require-any (subpath ...) ...) of paths.
func (s *seatbelt) anySubpath(prof *sbpl.Profile, prefix string, paths []string) sbpl.Filter {
	return sbpl.RequireAny(s.subpaths(prof, prefix, paths)...)
}

// splitAbsGlob splits an absolute glob into the literal directory before
// its first wildcard and the pattern below it.
func splitAbsGlob(d string) (root, rel string) {
	i := strings.IndexAny(d, "*?[{")
	root = filepath.Dir(d[:i+1])
	rel = strings.TrimPrefix(d[len(root):], "/")
	return root, rel
}

// globAncestors returns the patterns of the directories above what the
// protected pattern r names, "**/.git/hooks/" gives "**/.git"; none for a
// pattern with braces (which may hold a '/').
func globAncestors(r string) []string {
	r = strings.TrimSuffix(r, "/")
	if strings.ContainsAny(r, "{") {
		return nil
	}
	var out []string
	for i := 0; i < len(r); i++ {
		if r[i] == '/' {
			a := r[:i]
			if a != "**" && !strings.HasSuffix(a, "/**") {
				out = append(out, a)
			}
		}
	}
	return out
}

// appendNew appends each of xs not yet in ss.
func appendNew(ss []string, xs ...string) []string {
	for _, x := range xs {
		if !slices.Contains(ss, x) {
			ss = append(ss, x)
		}
	}
	return ss
}
