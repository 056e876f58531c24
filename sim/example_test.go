package sim_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/sluicehq/sluice/sim"
)

// A model API with a quota of 10 units per minute: a call that does not fit
// gets 429 with the whole seconds until it would.
func ExampleNewServer() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cfg := sim.DefaultServerConfig()
	cfg.Quota = 10
	cfg.TypeCosts = map[string]float64{"export": 5}
	cfg.Now = func() time.Time { return now }
	srv, err := sim.NewServer(cfg)
	if err != nil {
		panic(err)
	}
	call := func(header, value string) {
		req := httptest.NewRequest(http.MethodPost, "/items", nil)
		req.Header.Set(header, value)
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if ra := rec.Header().Get("Retry-After"); ra != "" {
			fmt.Println(rec.Code, "Retry-After:", ra)
			return
		}
		fmt.Println(rec.Code)
	}
	call("Sluice-Type", "export") // 5 units
	now = now.Add(20 * time.Second)
	call("X-Cost", "4")
	now = now.Add(500 * time.Millisecond)
	call("X-Cost", "2") // fits once the first 5 units leave, 39.5 s later
	st := srv.Stats()
	fmt.Println(st.AcceptedUnits, st.Throttled, st.WindowUnits)
	// Output:
	// 200
	// 200
	// 429 Retry-After: 40
	// 9 1 9
}

// Run a scenario in virtual time and read its summary.
func ExampleRun() {
	cfg, err := sim.Scenario(sim.ScenarioNoLimiter)
	if err != nil {
		panic(err)
	}
	cfg.Duration = 5 * time.Minute
	res, err := sim.Run(cfg)
	if err != nil {
		panic(err)
	}
	s := res.Summary
	fmt.Println(s.Throttled > 1000, s.UnitsAccepted <= 5*cfg.Quota)
	// Output: true true
}
