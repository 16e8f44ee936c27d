//go:build !linux

package globscan

import (
	"errors"
	"io/fs"
)

// cacheSupported: the cache reads every directory here (Cache.ScanPatterns
// is ScanPatterns).
const cacheSupported = false

var errNoCache = errors.New("globscan: the walk cache works only on Linux")

func keepsCtime(int64) bool { return false }

func listsInodes(int64) bool { return false }

func statID(string, bool) (dirID, bool, error) { return dirID{}, false, errNoCache }

func fsTypeAt(string) (int64, error) { return 0, errNoCache }

func (d *dirReader) id() (dirID, error) { return dirID{}, errNoCache }

func (d *dirReader) fsType() (int64, error) { return 0, errNoCache }

const openCacheFlags = 0

func ownerOf(fs.FileInfo) (int64, bool) { return 0, false }

func statIDAt(int, string) (dirID, bool, error) { return dirID{}, false, errNoCache }

func openPathAt(int, string, string) (int, error) { return -1, errNoCache }

func fdID(int) (dirID, error) { return dirID{}, errNoCache }

func closeFd(int) {}
