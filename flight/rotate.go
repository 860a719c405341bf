package flight

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// DumpName is the file a triggered dump of recorder name at t gets in its directory: the
// name and the time, so that the names sort as the dumps were made.
func DumpName(name string, t time.Time) string {
	return name + "-" + t.UTC().Format("20060102T150405.000Z") + ".dat"
}

// DumpPath is the path in dir of a new triggered dump of recorder name made at t: DumpName's,
// or, where a dump of that millisecond exists already (two triggers at once, a clock set
// back), the first free name a millisecond later, so no dump replaces another and the names
// still sort as the dumps were made.
func DumpPath(dir, name string, t time.Time) string {
	for i := 0; ; i++ {
		p := filepath.Join(dir, DumpName(name, t.Add(time.Duration(i)*time.Millisecond)))
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) || i == 1000 {
			return p
		}
	}
}

// Rotate removes recorder name's dumps in dir, oldest first, until at most keep are left
// (0: no limit by count) and they hold at most maxBytes together (0: no limit by size); the
// newest is never removed. It returns the files removed. Only files named as DumpName names
// them are looked at.
func Rotate(dir, name string, keep int, maxBytes int64) ([]string, error) {
	dumps, err := Dumps(dir, name)
	if err != nil {
		return nil, err
	}
	var total int64
	for _, d := range dumps {
		total += d.Size
	}
	var removed []string
	for len(dumps) > 1 && (keep > 0 && len(dumps) > keep || maxBytes > 0 && total > maxBytes) {
		p := filepath.Join(dir, dumps[0].Name)
		if err := os.Remove(p); err != nil {
			return removed, fmt.Errorf("rotating the dumps: %w", err)
		}
		removed = append(removed, p)
		total -= dumps[0].Size
		dumps = dumps[1:]
	}
	return removed, nil
}

// DumpFile is a triggered dump on disk.
type DumpFile struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
}

// Dumps lists recorder name's dumps in dir (files named as DumpName names them), oldest first.
func Dumps(dir, name string) ([]DumpFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var dumps []DumpFile
	for _, e := range ents {
		n := e.Name()
		if !e.Type().IsRegular() || !strings.HasPrefix(n, name+"-") || !strings.HasSuffix(n, "Z.dat") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		dumps = append(dumps, DumpFile{n, info.Size()})
	}
	sort.Slice(dumps, func(i, j int) bool { return dumps[i].Name < dumps[j].Name })
	return dumps, nil
}
