// Package reports renders profiles and results as Markdown tables and
// figures: PNG by default, PDF and SVG (gonum/plot's vector backends, fonts
// embedded) and paper column or page widths on request (FigureOptions,
// figure.go decides for every plot). It imports results and the pure
// roofline model, never measurement code (probes, kernels, engine).
package reports
