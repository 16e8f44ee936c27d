package landlock

import (
	"fmt"
	"strings"
)

// ABIVersion is one Landlock ABI version: what it added that cordon uses,
// and the file-system rights it handles. ABIs is the one table of them:
// the rights applied (Apply), what an older kernel lacks (cordon status)
// and the gaps reported at run time all read it.
type ABIVersion struct {
	// Version is the ABI version landlock_create_ruleset reports.
	Version int
	// Linux is the first Linux release with it, "" where cordon does not
	// name one.
	Linux string
	// Adds is what cordon uses from it, "" for versions it uses nothing of.
	Adds string
	// FSRights is the mask of file-system access rights it handles.
	FSRights uint64
}

// ABIs are the Landlock ABI versions cordon knows, oldest first.
var ABIs = []ABIVersion{
	{1, "5.13", "file-system rules", (1 << 13) - 1},
	{2, "5.19", "cross-directory rename/link", (1 << 14) - 1},
	{3, "6.2", "truncate control", (1 << 15) - 1},
	{4, "6.7", "TCP port rules", (1 << 15) - 1},
	{5, "6.10", "device ioctl control", fsHandled},
	{6, "6.12", "abstract-socket and signal scoping", fsHandled},
	{7, "", "", fsHandled},
	{8, "", "", fsHandled},
	{ResolveUnixABI, "", "pathname unix socket control", fsHandled | resolveUnix},
}

// abiVersion returns the newest entry of ABIs at or below abi; ok is
// false below ABI 1.
func abiVersion(abi int) (ABIVersion, bool) {
	var best ABIVersion
	ok := false
	for _, v := range ABIs {
		if v.Version <= abi {
			best, ok = v, true
		}
	}
	return best, ok
}

// fsSupported is the file-system rights mask of each ABI version.
func fsSupported(abi int) uint64 {
	v, _ := abiVersion(abi)
	return v.FSRights
}

// Lacks says what the ABI abi lacks of what cordon uses up to ABI 6
// ("ABI 3 lacks TCP port rules (ABI 4, Linux 6.7), ..."), "" when it has
// all of it or Landlock is absent (abi < 1). Pathname unix socket control
// (ABI 9) is left out: where it matters, runs report it themselves.
func Lacks(abi int) string {
	if abi < 1 {
		return ""
	}
	var missing []string
	for _, v := range ABIs {
		if v.Version > abi && v.Version <= 6 && v.Adds != "" {
			missing = append(missing, fmt.Sprintf("%s (ABI %d, Linux %s)", v.Adds, v.Version, v.Linux))
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("ABI %d lacks %s", abi, strings.Join(missing, ", "))
}
