package launch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/internal/sandboxcache"
)

// Prepare performs the plan's preparations on the host (Plan.Prepare), in
// order: what plan.Build decided must exist or change before the run.
func Prepare(pl *plan.Plan) error {
	for _, p := range pl.Prepare {
		if err := prepareOne(p); err != nil {
			return err
		}
	}
	return nil
}

// prepareOne performs one preparation; only those whose kind says an error
// fails the run return one.
func prepareOne(p plan.Preparation) error {
	switch p.Kind {
	case plan.PrepDir:
		if err := os.MkdirAll(p.Path, p.Mode); err != nil {
			return fmt.Errorf("creating %s: %w", p.Path, err)
		}
	case plan.PrepStateFile:
		return ensureStateFile(p)
	case plan.PrepRecordCache:
		// A cache whose record cannot be written is listed as of an
		// unknown workspace (cordon cache).
		_ = sandboxcache.Record(p.Path, p.Workspace)
	case plan.PrepGoModDir:
		os.Mkdir(p.Path, p.Mode)
	case plan.PrepSeedSumdb:
		seedSumdb(p.Path, p.From)
	case plan.PrepSeedGoModules:
		seedGoModules(p.Path, p.Workspace, p.GoSum, p.From)
	case plan.PrepUnseedGoModules:
		unseedGoModules(p.Path)
	default:
		return fmt.Errorf("launch: unknown preparation %q of %s", p.Kind, p.Path)
	}
	return nil
}

// ensureStateFile makes p.Path, in cordon's state directory, a directory
// (p.Dir) or a regular file of mode p.Mode holding p.Content. The common
// case, where it is as it should be, costs one lstat; a file's content is
// checked by its size only (the state directory is cordon's own).
func ensureStateFile(p plan.Preparation) error {
	fi, err := os.Lstat(p.Path)
	if err == nil && fi.IsDir() == p.Dir && fi.Mode().Perm() == p.Mode && (p.Dir || fi.Mode().IsRegular()) &&
		(p.Content == "" || fi.Size() == int64(len(p.Content))) {
		return nil
	}
	if p.Dir {
		if err := os.Mkdir(p.Path, p.Mode); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("creating %s: %w", p.Path, err)
		}
		if err := os.Chmod(p.Path, p.Mode); err != nil {
			return fmt.Errorf("creating %s: %w", p.Path, err)
		}
		return nil
	}
	// A file is written whole to a new name beside it, given its mode,
	// and renamed over the old one: runs that start at once each see
	// either the old file or a whole new one. (Written in place, one
	// run's chmod to a read-only mode raced another's write: EACCES.)
	f, err := os.CreateTemp(filepath.Dir(p.Path), "."+filepath.Base(p.Path)+".new-")
	if err != nil {
		return fmt.Errorf("creating %s: %w", p.Path, err)
	}
	tmp := f.Name()
	_, err = f.WriteString(p.Content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, p.Mode)
	}
	if err == nil {
		err = os.Rename(tmp, p.Path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("creating %s: %w", p.Path, err)
	}
	return nil
}
