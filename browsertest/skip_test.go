//go:build !browser

package browsertest

import "testing"

// TestBrowser stands in for the browser tests, which are built only with
// the tag "browser".
func TestBrowser(t *testing.T) {
	t.Skip("browser tests are built with -tags browser and need Chromium: run `make test-browser`")
}
