package agent

import (
	"context"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// settle is how long the file must be quiet before it is read again: an editor's or a
// ConfigMap's update is several events (a write, a rename, a symlink swap of ..data).
const settle = 250 * time.Millisecond

// Watch sends on the returned channel when the file at path may have changed: it watches the
// file's directory (an editor's save and a Kubernetes ConfigMap's update both replace the file
// rather than write it), and sends once the directory has been quiet for a moment. Reload
// compares the bytes, so a spurious send costs a read.
func Watch(ctx context.Context, path string) (<-chan struct{}, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	if err := w.Add(filepath.Dir(path)); err != nil {
		w.Close()
		return nil, err
	}
	out := make(chan struct{}, 1)
	go func() {
		defer w.Close()
		var quiet <-chan time.Time
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-w.Events:
				if !ok {
					return
				}
				quiet = time.After(settle)
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
				quiet = time.After(settle) // events may have been lost: read again
			case <-quiet:
				quiet = nil
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}
	}()
	return out, nil
}
