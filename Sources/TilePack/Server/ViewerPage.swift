/// The viewer: one HTML page that loads Leaflet from this server (`/leaflet/…`, never a CDN),
/// draws the composited map (`/view/{z}/{x}/{y}.png`, locked tiles dimmed with their price),
/// each region's outline and name and each product's area, answers a click with `/query`,
/// and lists the store's products with prices and owned/locked state.
///
/// `?click=LAT,LON[,ZOOM]` simulates a click on load (the browser test uses it); the answer
/// is rendered into `#answer`, whose `data-state` becomes `answered`.
enum ViewerPage {
    static let html = #"""
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>tilepack viewer</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="/leaflet/leaflet.css">
<script src="/leaflet/leaflet.js"></script>
<style>
  html, body { margin: 0; height: 100%; font: 13px/1.35 system-ui, sans-serif; }
  #map { position: absolute; left: 0; top: 0; bottom: 0; right: 300px; background: #ecead9; }
  #side { position: absolute; right: 0; top: 0; bottom: 0; width: 300px; overflow: auto; box-sizing: border-box;
          padding: 8px 10px; background: #fafaf7; border-left: 1px solid #ccc; }
  h1 { font-size: 15px; margin: 0 0 6px; } h2 { font-size: 13px; margin: 12px 0 4px; }
  .product { margin: 3px 0; padding: 3px 5px; border-radius: 3px; background: #eee; }
  .owned { background: #d9f0d9; } .locked { background: #f3e1d6; }
  .swatch { display: inline-block; width: 12px; height: 12px; border: 1px solid #555; vertical-align: middle; }
  .region-label { background: rgba(255,255,255,.85); border: 1px solid #357; font-weight: 600; }
  #answer .row { margin: 2px 0; }
</style>
</head>
<body>
<div id="map"></div>
<div id="side">
  <h1>tilepack</h1>
  <div id="regions"></div>
  <h2>Point</h2>
  <div id="answer" data-state="empty">Click the map for the colour and elevation there.</div>
  <h2>Store</h2>
  <div id="store">…</div>
</div>
<script>
"use strict";
const params = new URLSearchParams(location.search);
const esc = s => String(s).replace(/[&<>"']/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"})[c]);
const map = L.map("map", { worldCopyJump: true });
let marker = null;

function showAnswer(lat, lon, answers) {
  const el = document.getElementById("answer");
  const rows = [`<div class="row"><b>${lat.toFixed(5)}, ${lon.toFixed(5)}</b> at zoom ${answers.length ? answers[0].zoom : "?"}</div>`];
  let popup = [];
  for (const a of answers) {
    if (a.archive === null) { rows.push(`<div class="row">${esc(a.message)}</div>`); popup.push("no region here"); continue; }
    const name = esc(a.region);
    const tile = `${a.tile.z}/${a.tile.x}/${a.tile.y}`;
    if (a.locked) {
      const offer = a.unlock.length ? `buy ${esc(a.unlock[0].title)} (${esc(a.unlock[0].price)} ${esc(a.unlock[0].currency)})` : "not on sale";
      rows.push(`<div class="row answer-locked">${name}: tile ${tile} locked — ${offer}</div>`);
      popup.push(`${name}: locked`);
      continue;
    }
    const c = a.rgba ? `<span class="swatch" style="background: rgba(${a.rgba[0]},${a.rgba[1]},${a.rgba[2]},${a.rgba[3] / 255})"></span> rgba(${a.rgba.join(", ")})` : "no tile";
    const e = a.elevation_m === null ? "" : `, elevation <span class="elevation">${a.elevation_m} m</span>`;
    rows.push(`<div class="row answer-open">${name}: tile ${tile}, colour ${c}${e}</div>`);
    popup.push(`${name}: ${a.elevation_m === null ? (a.rgba ? "rgba(" + a.rgba.join(",") + ")" : "no tile") : a.elevation_m + " m"}`);
  }
  el.innerHTML = rows.join("");
  el.dataset.state = "answered";
  if (marker) marker.remove();
  marker = L.marker([lat, lon]).addTo(map).bindPopup(popup.join("<br>")).openPopup();
}

function ask(lat, lon, zoom) {
  const el = document.getElementById("answer");
  el.dataset.state = "asking";
  fetch(`/query?lat=${lat}&lon=${lon}&zoom=${zoom}`)
    .then(r => r.json())
    .then(j => Array.isArray(j) ? showAnswer(lat, lon, j) : (el.textContent = j.message, el.dataset.state = "error"))
    .catch(err => { el.textContent = "query failed: " + err; el.dataset.state = "error"; });
}

function loadStore() {
  fetch("/store").then(r => r.json()).then(s => {
    const el = document.getElementById("store");
    if (!s.catalog) { el.textContent = "No catalog: every region is open."; return; }
    el.innerHTML = `<div>Free up to zoom ${s.free_max_zoom}.</div>` + s.products.map(p =>
      `<div class="product ${p.owned ? "owned" : "locked"}"><b>${esc(p.title)}</b><br>${esc(p.price)} ${esc(p.currency)} · ${esc(p.kind)} · ` +
      `${p.owned ? "owned" : (p.available ? "locked" : "unavailable")}</div>`).join("");
  });
}

fetch("/regions").then(r => r.json()).then(info => {
  L.tileLayer("/view/{z}/{x}/{y}.png", { maxZoom: 18, attribution: esc(info.attribution) }).addTo(map);
  let all = null;
  const list = [];
  for (const r of info.regions) {
    if (!r.bounds) continue;
    const b = L.latLngBounds([r.bounds[1], r.bounds[0]], [r.bounds[3], r.bounds[2]]);
    all = all ? all.extend(b) : L.latLngBounds(b.getSouthWest(), b.getNorthEast());
    L.rectangle(b, { color: "#246", weight: 2, fill: false, interactive: false }).addTo(map)
      .bindTooltip(esc(r.name), { permanent: true, direction: "center", className: "region-label" });
    list.push(`<div>${esc(r.name)} <small>(${esc(r.codec)}, z${r.minzoom}–${r.maxzoom}${r.elevation ? ", elevation" : ""})</small></div>`);
  }
  for (const a of info.areas) {
    L.polygon(a.rings.map(ring => ring.map(p => [p[1], p[0]])), { color: "#c60", weight: 1.5, dashArray: "5 4", fill: false, interactive: false })
      .addTo(map);
  }
  document.getElementById("regions").innerHTML = list.join("") || "No regions in this library.";
  const click = (params.get("click") || "").split(",").map(Number);
  if (click.length >= 2 && click.every(Number.isFinite)) {
    map.setView([click[0], click[1]], click.length > 2 ? click[2] : 11);
    ask(click[0], click[1], map.getZoom());
  } else if (all) {
    map.fitBounds(all);
  } else {
    map.setView([0, 0], 1);
  }
  map.on("click", e => ask(e.latlng.lat, e.latlng.lng, map.getZoom()));
});
loadStore();
</script>
</body>
</html>
"""#

    static func missingLibrary(_ problem: String) -> String {
        let text = problem.replacingHTMLSpecials
        return """
        <!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>tilepack viewer: map library missing</title></head>
        <body style="font: 15px system-ui, sans-serif; margin: 2em;"><h1>The viewer's map library is missing</h1>
        <p>\(text)</p><p>The tile routes (/tiles/…, /terrain/…, /query, /store) work without it.</p></body></html>
        """
    }
}

extension String {
    var replacingHTMLSpecials: String {
        var out = ""
        for c in self {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.append(c)
            }
        }
        return out
    }
}
