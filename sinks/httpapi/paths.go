package httpapi

import (
	"net/url"
	"sync"
	"sync/atomic"
)

// maxCachedPaths bounds the paths whose resolved URL a Sink keeps.
const maxCachedPaths = 1024

// pathCache keeps the URLs that resolve built for the paths seen: the jobs
// of a type share a path, and every job's path is resolved twice (Check
// before the job waits for units, then Send), each time with its checks
// and a parse of the URL back. Only paths that resolved are kept, and no
// more than maxCachedPaths of them (jobs with a path each fill it once,
// then resolve as before). Reads take no lock: the map is replaced, never
// changed, when a path is added.
type pathCache struct {
	m  atomic.Pointer[map[string]url.URL]
	mu sync.Mutex // serializes adds
}

// resolve returns resolve(base, p), from the cache when it holds p. The
// URL is the caller's own.
func (c *pathCache) resolve(base *url.URL, p string) (*url.URL, error) {
	if m := c.m.Load(); m != nil {
		if u, ok := (*m)[p]; ok {
			return &u, nil
		}
	}
	u, err := resolve(base, p)
	if err != nil {
		return nil, err
	}
	c.add(p, *u)
	return u, nil
}

func (c *pathCache) add(p string, u url.URL) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m.Load()
	n := 0
	if old != nil {
		n = len(*old)
	}
	if n >= maxCachedPaths {
		return
	}
	m := make(map[string]url.URL, n+1)
	if old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	m[p] = u
	c.m.Store(&m)
}

// check reports whether p resolves, as resolve does, without a copy of
// the URL when it is cached.
func (c *pathCache) check(base *url.URL, p string) error {
	if m := c.m.Load(); m != nil {
		if _, ok := (*m)[p]; ok {
			return nil
		}
	}
	_, err := c.resolve(base, p)
	return err
}
