// Package web serves sluice's two pages: the simulator page of `sluice
// simulate --serve` and the live page of a running worker (`sluice run
// --ui`). Their HTML, CSS and JavaScript are embedded in the binary (no CDN,
// no network at run time) and share one chart module, static/chart.js.
//
// # The simulator page
//
// SimServer runs the simulation on the server, with the sim package and the
// limiter's own core (sim.Live): one set of rules. Each page that connects
// to its event stream gets a simulation session of its own, which lives as
// long as the stream: one goroutine (the stream's handler) owns the
// session, advances it by the elapsed real time times the chosen speed,
// and writes a frame of its state as a Server-Sent Event at
// SimConfig.FrameInterval (12.5 frames a second by default). The page's
// controls are POSTed to the session, which applies them between two
// frames. At most SimConfig.MaxSessions sessions run at once; a stream
// beyond that is refused with 503. A session ends when its stream does:
// when the page goes away, or when the request's context is cancelled (the
// server's shutdown, through http.Server.BaseContext).
//
// # The live page
//
// LiveHandler streams snapshots of a running worker read from a LiveSource
// (its limiter, its metrics, the members of its share) every
// LiveConfig.Interval; it holds no state of its own beyond the streams
// open, at most LiveConfig.MaxStreams.
package web
