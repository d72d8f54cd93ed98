// Package reports renders profiles and results as Markdown tables, as
// report.html (html.go: one self-contained page per probe or sweep, the
// same Markdown rendered by goldmark, the figures inlined as SVG) and
// as figures: PNG by default, PDF and SVG (gonum/plot's vector backends, fonts
// embedded) and paper column or page widths on request (FigureOptions,
// figure.go decides for every plot). It imports results and the pure
// roofline model, never measurement code (probes, kernels, engine).
//
// The sweep report (Sweep) is spread over files by responsibility:
// sweep.go (options, summary, staging and report.md's head),
// sweep_data.go (the cells' labels, orders and captions),
// sweep_requests.go and sweep_operators.go (the request-level and the
// operator-level sections), sweep_plots.go and sweep_plots_operators.go
// (their figures), serving.go (the rate sweep's serving section).
//
// Every plot kind has a golden SVG in testdata/golden (golden_test.go:
// drawn from fixed inputs, numbers compared within 0.15 pt, text
// exactly), and so has the Markdown that bench report and bench probe
// write: report.md of the fixture sweeps and profile.md of the fixture
// profile (golden_md_test.go: compared byte for byte; dates and machine
// names come from the input, never the clock or the host). After an
// intended change to a figure or a table, regenerate them with
//
//	go test ./reports -update    (or -run 'TestGolden(Figures|Markdown)' -update)
//
// and review the diff.
package reports
