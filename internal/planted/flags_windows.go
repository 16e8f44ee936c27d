package planted

// Open flags: Windows has none of these. The files are opened through an
// os.Root (or by a path whose last component was checked with Lstat),
// which keeps them inside their directory; a link at the last component
// is followed there.
const (
	oNoFollow  = 0
	oNonblock  = 0
	oDirectory = 0
)
