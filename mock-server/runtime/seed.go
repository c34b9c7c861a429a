package runtime

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// seedTargets maps a Seed key to the sandbox directory's subdirectory.
var seedTargets = map[string]string{"/workspace": "workspace", "/tmp": "tmp", "/root": "home", "/var": "var"}

// copySeed copies each seed tree (a directory the server wrote: directories
// and regular files only; anything else is skipped) into the sandbox
// directory dir, before the sandbox starts. Files keep their permission
// bits; existing files (the /var skeleton's) are replaced.
func copySeed(dir string, seed map[string]string) error {
	for path, src := range seed {
		sub, ok := seedTargets[path]
		if !ok {
			return fmt.Errorf("seed for %s: only /workspace, /tmp, /root and /var can be seeded", path)
		}
		dst := filepath.Join(dir, sub)
		if _, err := os.Lstat(src); os.IsNotExist(err) {
			continue
		}
		err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(src, p)
			if err != nil || rel == "." {
				return err
			}
			target := filepath.Join(dst, rel)
			switch {
			case d.IsDir():
				return os.MkdirAll(target, 0o755)
			case d.Type().IsRegular():
				info, err := d.Info()
				if err != nil {
					return err
				}
				return copyRegular(p, target, info.Mode().Perm())
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("seed %s: %w", path, err)
		}
	}
	return nil
}

func copyRegular(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.Remove(dst); err != nil && !os.IsNotExist(err) {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(dst, perm) // the umask narrowed it
}
