#include "bench/report_page_assets.h"

namespace kiln {

const char* const kReportStyle = R"css(
body{font-family:system-ui,sans-serif;margin:0;color:#222;background:#fafafa}
header{background:#23395d;color:#fff;padding:14px 24px}header h1{margin:0;font-size:21px}
header .meta{color:#d8e0ee;font-size:13px;margin-top:4px}
nav{padding:8px 24px;background:#e9edf3;font-size:14px}nav a{margin-right:16px;color:#23395d}
main{padding:8px 24px 40px}h2{font-size:19px;margin:28px 0 8px;border-bottom:1px solid #ccd;padding-bottom:4px}
h3{font-size:15px;margin:16px 0 6px}.meta{color:#555;font-size:13px}
table{border-collapse:collapse;font-size:13px;background:#fff;margin:8px 0}
td,th{border:1px solid #ccd;padding:3px 8px;text-align:right}td:first-child,th:first-child{text-align:left}
table.sortable th{cursor:pointer;user-select:none}table.sortable th:hover{background:#e9edf3}
td.l{text-align:left}td.cfg{text-align:left;max-width:520px;word-break:break-all}code{font-size:12px}
.wrong{color:#b00;font-weight:bold}.chart{position:relative;background:#fff;border:1px solid #dde;margin:8px 0}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:10px}.card{margin:14px 0 22px}
.empty{background:#fff;border:1px dashed #99a;padding:18px;font-size:15px}
.running{background:#fff4d6;color:#553;padding:6px 24px;font-size:14px}
abbr{text-decoration:underline dotted;cursor:help}
)css";

const char* const kReportScript = R"js(
(function () {
  'use strict';
  var charts = JSON.parse(document.getElementById('kiln-charts').textContent);
  var tooltip = Chart.defaults.plugins.tooltip.callbacks;
  var defaultLabel = tooltip.label, defaultTitle = tooltip.title;
  tooltip.label = function (ctx) {
    var raw = ctx.raw;
    if (raw && typeof raw === 'object' && raw.tip) return raw.tip.split('\n').concat(
        [ctx.dataset.label + ': (' + Number(raw.x).toPrecision(3) + ', ' + Number(raw.y).toPrecision(3) + ')']);
    return defaultLabel.call(this, ctx);
  };
  tooltip.title = function (items) {
    var k = items.length ? items[0].chart.options.plugins.kiln : null;
    if (k && k.titles) return k.titles[items[0].dataIndex];
    return defaultTitle.call(this, items);
  };
  // Labels above bars: a dataset's kilnLabels, one string per bar.
  Chart.register({
    id: 'kiln',
    afterDatasetsDraw: function (chart) {
      var ctx = chart.ctx;
      ctx.save();
      ctx.font = '10px sans-serif';
      ctx.fillStyle = '#333';
      ctx.textAlign = 'center';
      chart.data.datasets.forEach(function (ds, i) {
        if (!ds.kilnLabels || !chart.isDatasetVisible(i)) return;
        chart.getDatasetMeta(i).data.forEach(function (bar, j) {
          var text = ds.kilnLabels[j];
          if (text) ctx.fillText(text, bar.x, bar.y - 3);
        });
      });
      ctx.restore();
    }
  });
  var drawn = 0, next = 0;
  function drawSome() {
    var end = Math.min(next + 6, charts.length);
    for (; next < end; ++next) {
      var c = charts[next];
      try {
        var chart = new Chart(document.getElementById(c.id), c.spec);
        // A chart with data must have placed some of it (a wrong axis type
        // draws the axes and no point).
        var hasData = false, placed = false;
        chart.data.datasets.forEach(function (ds, i) {
          if (ds.data.length) hasData = true;
          chart.getDatasetMeta(i).data.forEach(function (el) {
            if (isFinite(el.x) && isFinite(el.y)) placed = true;
          });
        });
        if (hasData && !placed) console.error('chart ' + c.id + ' placed none of its points');
        else ++drawn;
      } catch (e) {
        console.error('chart ' + c.id + ' was not drawn: ' + e);
      }
    }
    if (next < charts.length) setTimeout(drawSome, 0);
    else document.body.dataset.chartsDrawn = String(drawn);
  }
  drawSome();
  // Sortable tables: click a header; numbers sort by data-v.
  document.querySelectorAll('table.sortable').forEach(function (table) {
    table.querySelectorAll('th').forEach(function (th, col) {
      th.addEventListener('click', function () {
        var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
        var up = th.dataset.dir !== 'up';
        th.dataset.dir = up ? 'up' : 'down';
        function key(row) {
          var cell = row.cells[col];
          if (!cell) return '';
          var v = cell.dataset.v;
          return v !== undefined ? Number(v) : cell.textContent;
        }
        rows.sort(function (a, b) {
          var x = key(a), y = key(b);
          var r = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
          return up ? r : -r;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
})();
)js";

}  // namespace kiln
