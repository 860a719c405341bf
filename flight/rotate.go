package flight

import (
	"fmt"
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

// Rotate removes recorder name's dumps in dir, oldest first, until at most keep are left
// (0: no limit by count) and they hold at most maxBytes together (0: no limit by size); the
// newest is never removed. It returns the files removed. Only files named as DumpName names
// them are looked at.
func Rotate(dir, name string, keep int, maxBytes int64) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	type dump struct {
		name string
		size int64
	}
	var dumps []dump
	var total int64
	for _, e := range ents {
		n := e.Name()
		if !e.Type().IsRegular() || !strings.HasPrefix(n, name+"-") || !strings.HasSuffix(n, "Z.dat") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		dumps = append(dumps, dump{n, info.Size()})
		total += info.Size()
	}
	sort.Slice(dumps, func(i, j int) bool { return dumps[i].name < dumps[j].name })
	var removed []string
	for len(dumps) > 1 && (keep > 0 && len(dumps) > keep || maxBytes > 0 && total > maxBytes) {
		p := filepath.Join(dir, dumps[0].name)
		if err := os.Remove(p); err != nil {
			return removed, fmt.Errorf("rotating the dumps: %w", err)
		}
		removed = append(removed, p)
		total -= dumps[0].size
		dumps = dumps[1:]
	}
	return removed, nil
}
