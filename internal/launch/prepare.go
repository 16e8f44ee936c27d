package launch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

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
	} else {
		// O_EXCL: an existing mask is mode 0, and opening it again fails
		// for anyone but root.
		f, err := os.OpenFile(p.Path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, p.Mode)
		switch {
		case errors.Is(err, fs.ErrExist):
		case err != nil:
			return fmt.Errorf("creating %s: %w", p.Path, err)
		default:
			f.Close()
		}
	}
	if err := os.Chmod(p.Path, p.Mode); err != nil {
		return fmt.Errorf("creating %s: %w", p.Path, err)
	}
	if p.Dir || p.Content == "" {
		return nil
	}
	if fi, err := os.Lstat(p.Path); err == nil && fi.Size() == int64(len(p.Content)) {
		return nil
	}
	// Rewritten when someone changed it.
	if err := os.Chmod(p.Path, 0o644); err != nil {
		return fmt.Errorf("creating %s: %w", p.Path, err)
	}
	if err := os.WriteFile(p.Path, []byte(p.Content), p.Mode); err != nil {
		return fmt.Errorf("creating %s: %w", p.Path, err)
	}
	if err := os.Chmod(p.Path, p.Mode); err != nil {
		return fmt.Errorf("creating %s: %w", p.Path, err)
	}
	return nil
}
