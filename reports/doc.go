// Package reports renders profiles and results as Markdown tables and PNG
// plots; it imports results and the pure roofline model, never measurement
// code.
package reports
