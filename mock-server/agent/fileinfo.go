package agent

import (
	"io/fs"
	"os"
	"os/user"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// fileInfo is execd's FileInfo; mode is the octal permission digits read as a
// decimal integer (0755 → 755).
type fileInfo struct {
	Path       string `json:"path"`
	Type       string `json:"type"`
	Size       int64  `json:"size"`
	ModifiedAt string `json:"modified_at"`
	CreatedAt  string `json:"created_at"`
	Owner      string `json:"owner"`
	Group      string `json:"group"`
	Mode       int    `json:"mode"`
}

func octalDigits(m fs.FileMode) int {
	n, _ := strconv.Atoi(strconv.FormatUint(uint64(m.Perm()), 8))
	return n
}

// parseMode reads execd's decimal-looking octal mode (755 → 0755).
func parseMode(m int) (fs.FileMode, bool) {
	if m < 0 {
		return 0, false
	}
	v, err := strconv.ParseUint(strconv.Itoa(m), 8, 32)
	if err != nil || v > 0o7777 {
		return 0, false
	}
	fm := fs.FileMode(v & 0o777)
	if v&0o4000 != 0 {
		fm |= fs.ModeSetuid
	}
	if v&0o2000 != 0 {
		fm |= fs.ModeSetgid
	}
	if v&0o1000 != 0 {
		fm |= fs.ModeSticky
	}
	return fm, true
}

func infoOf(display string, fi fs.FileInfo) fileInfo {
	t := "other"
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		t = "symlink"
	case fi.IsDir():
		t = "directory"
	case fi.Mode().IsRegular():
		t = "file"
	}
	out := fileInfo{Path: display, Type: t, Size: fi.Size(), Mode: octalDigits(fi.Mode()),
		ModifiedAt: fi.ModTime().UTC().Format(time.RFC3339)}
	out.CreatedAt = out.ModifiedAt
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		out.CreatedAt = changeTime(st).UTC().Format(time.RFC3339)
		out.Owner = userName(st.Uid)
		out.Group = groupName(st.Gid)
	}
	return out
}

func lstatInfo(host, display string) (fileInfo, error) {
	fi, err := os.Lstat(host)
	if err != nil {
		return fileInfo{}, err
	}
	return infoOf(display, fi), nil
}

var (
	nameMu sync.Mutex
	users  = map[uint32]string{}
	groups = map[uint32]string{}
)

func userName(uid uint32) string {
	nameMu.Lock()
	defer nameMu.Unlock()
	if n, ok := users[uid]; ok {
		return n
	}
	n := strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(n); err == nil {
		n = u.Username
	}
	users[uid] = n
	return n
}

func groupName(gid uint32) string {
	nameMu.Lock()
	defer nameMu.Unlock()
	if n, ok := groups[gid]; ok {
		return n
	}
	n := strconv.FormatUint(uint64(gid), 10)
	if g, err := user.LookupGroupId(n); err == nil {
		n = g.Name
	}
	groups[gid] = n
	return n
}

// chownNames applies owner/group names (or numeric strings); empty = keep.
func chownNames(p, owner, group string) error {
	uid, gid := -1, -1
	if owner != "" {
		if n, err := strconv.Atoi(owner); err == nil {
			uid = n
		} else if u, err := user.Lookup(owner); err == nil {
			uid, _ = strconv.Atoi(u.Uid)
		} else {
			return err
		}
	}
	if group != "" {
		if n, err := strconv.Atoi(group); err == nil {
			gid = n
		} else if g, err := user.LookupGroup(group); err == nil {
			gid, _ = strconv.Atoi(g.Gid)
		} else {
			return err
		}
	}
	if uid == -1 && gid == -1 {
		return nil
	}
	return os.Lchown(p, uid, gid)
}
