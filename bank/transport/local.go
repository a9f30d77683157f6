package transport

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// localFolder is a folder on this machine.
type localFolder struct{ dir string }

func newLocalFolder(dir string) (*localFolder, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("transport: %w", err)
	}
	return &localFolder{dir: dir}, nil
}

func (f *localFolder) String() string { return "file://" + f.dir }
func (f *localFolder) Close() error   { return nil }

func nonce() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Put writes to a temporary file, flushes it to disk, renames it and
// flushes the folder: after Put returns, a crash leaves the whole file
// under its name, and before, none under it.
func (f *localFolder) Put(_ context.Context, name string, data []byte) error {
	if err := checkName(name); err != nil {
		return err
	}
	tmp := filepath.Join(f.dir, tempName(name, nonce()))
	if err := writeSynced(tmp, data); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("transport: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(f.dir, name)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("transport: %w", err)
	}
	return syncDir(f.dir)
}

func writeSynced(path string, data []byte) error {
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return err
	}
	if _, err := file.Write(data); err != nil {
		file.Close()
		return err
	}
	if err := file.Sync(); err != nil {
		file.Close()
		return err
	}
	return file.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("transport: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("transport: %w", err)
	}
	return nil
}

func (f *localFolder) List(context.Context) ([]string, error) {
	entries, err := os.ReadDir(f.dir)
	if err != nil {
		return nil, fmt.Errorf("transport: %w", err)
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && checkName(e.Name()) == nil {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names, nil
}

func (f *localFolder) Get(_ context.Context, name string) ([]byte, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	file, err := os.Open(filepath.Join(f.dir, name))
	if err != nil {
		return nil, fmt.Errorf("transport: %w", err)
	}
	defer file.Close()
	data, err := readLimited(file, name)
	if err != nil {
		return nil, fmt.Errorf("transport: %w", err)
	}
	return data, nil
}

func (f *localFolder) Move(_ context.Context, name, subfolder string) error {
	if err := errors.Join(checkName(name), checkName(subfolder)); err != nil {
		return err
	}
	sub := filepath.Join(f.dir, subfolder)
	if err := os.MkdirAll(sub, 0o750); err != nil {
		return fmt.Errorf("transport: %w", err)
	}
	if err := os.Rename(filepath.Join(f.dir, name), filepath.Join(sub, name)); err != nil {
		return fmt.Errorf("transport: %w", err)
	}
	return errors.Join(syncDir(sub), syncDir(f.dir))
}
