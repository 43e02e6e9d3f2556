// The fixed parts of `kiln report`'s page: its style sheet and its script.
// The script draws each chart spec with Chart.js (a few per frame, so the
// page stays responsive with a hundred charts), adds what JSON cannot say
// (tooltips with a point's "tip", labels above bars, tooltip titles),
// makes tables with class "sortable" sort by any column, and records how
// many charts it drew in <body data-charts-drawn>.
#pragma once

namespace kiln {

extern const char* const kReportStyle;
extern const char* const kReportScript;

}  // namespace kiln
