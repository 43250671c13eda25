/// The viewer: one HTML page that loads Leaflet from this server (`/leaflet/…`, never a CDN),
/// draws the composited map (`/view/{z}/{x}/{y}.png`, locked tiles dimmed with their price),
/// each region's outline and name and each product's area, answers a click with `/query`,
/// and lists the store's products with prices and owned/locked state.
///
/// The store panel (when `serve` runs with ``StorefrontActions``) walks the whole journey for the
/// ledger and account `serve` was started with: Buy (disabled when owned) and Restore, then
/// for each pack of `GET /packs` its title and size, Download (enabled when owned or free)
/// with a progress bar (bytes/total, rate, ETA) polled from `/store/downloads` every 300 ms,
/// Update when the installed version is lower than the listed one, and a status line. After
/// a buy or restore the map's tiles are fetched again, so what was unlocked shows.
///
/// `?click=LAT,LON[,ZOOM]` simulates a click on load (the browser test uses it); the answer
/// is rendered into `#answer`, whose `data-state` becomes `answered`.
/// `?journey=STEP,STEP…` (steps `buy:PRODUCT`, `restore`, `download:PACK`, `update:PACK`)
/// presses the panel's own buttons in turn once the store has loaded, waiting for each to
/// finish; `#journey` gets `data-state` `done` or `failed` and one line per step.
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
          .pack { margin: 3px 0; padding: 3px 5px; border-radius: 3px; background: #eee; }
          .pack progress { width: 100%; height: 8px; display: none; }
          .pack[data-state="downloading"] progress { display: block; }
          .pack .progress-text, .pack .pack-status { font-size: 12px; color: #444; }
          button { font: inherit; margin: 2px 4px 0 0; }
          #status { margin-top: 6px; font-size: 12px; min-height: 1.3em; }
          #status[data-state="error"] { color: #a00; }
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
          <div id="store" data-state="loading">…</div>
          <div id="store-actions" hidden><button id="restore" type="button">Restore purchases</button></div>
          <div id="packs-panel" hidden><h2>Packs</h2><div id="packs">…</div></div>
          <div id="status" data-state="idle"></div>
          <div id="journey" data-state="none" hidden></div>
          <div id="labels" hidden></div>
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

        // MARK: store panel

        const shop = { store: null, packs: [], installed: {}, downloads: {}, actions: false, polling: null };
        let baseLayer = null;

        async function getJSON(url) {
          const r = await fetch(url, { cache: "no-store" });
          const j = await r.json();
          if (!r.ok) throw new Error(j.message || ("HTTP " + r.status));
          return j;
        }

        async function post(url) {
          const r = await fetch(url, { method: "POST" });
          const j = await r.json().catch(() => ({}));
          if (!r.ok) throw new Error(j.message || ("HTTP " + r.status));
          return j;
        }

        function setStatus(text, state) {
          const el = document.getElementById("status");
          el.textContent = text;
          el.dataset.state = state;
        }

        function megabytes(n) { return (n / 1e6).toFixed(1) + " MB"; }

        function ownedProducts() {
          return new Set((shop.store && shop.store.products || []).filter(p => p.owned).map(p => p.id));
        }

        function renderStore() {
          const s = shop.store, el = document.getElementById("store");
          if (!s.catalog) { el.textContent = "No catalog: every region is open."; el.dataset.state = "loaded"; return; }
          el.innerHTML = `<div>Free up to zoom ${s.free_max_zoom}.</div>` + s.products.map(p =>
            `<div class="product ${p.owned ? "owned" : "locked"}" data-product="${esc(p.id)}" data-state="${p.owned ? "owned" : (p.available ? "locked" : "unavailable")}">` +
            `<b>${esc(p.title)}</b><br>${esc(p.price)} ${esc(p.currency)} · ${esc(p.kind)} · ` +
            `${p.owned ? "owned" : (p.available ? "locked" : "unavailable")}` +
            (shop.actions ? `<br><button type="button" class="buy" data-product="${esc(p.id)}"${p.owned || !p.available ? " disabled" : ""}>${p.owned ? "Owned" : "Buy"}</button>` : "") +
            `</div>`).join("");
          for (const b of el.querySelectorAll("button.buy")) b.onclick = () => (shop.last = buy(b.dataset.product));
          el.dataset.state = "loaded";
        }

        function packTitle(p) {
          if (!p.product_id) return "Free overview";
          const product = (shop.store && shop.store.products || []).find(x => x.id === p.product_id);
          return product ? product.title : p.pack_id;
        }

        function renderPacks() {
          const el = document.getElementById("packs"), owned = ownedProducts();
          el.innerHTML = shop.packs.map(p => {
            const mine = !p.product_id || owned.has(p.product_id);
            const inst = shop.installed[p.pack_id], d = shop.downloads[p.pack_id];
            const running = d && d.state === "running";
            const state = running ? "downloading" : (inst && inst.version !== null ?
              (inst.version < p.version ? "update-available" : "installed") : (d && d.state === "failed" ? "failed" : (mine ? "available" : "locked")));
            let line = inst && inst.version !== null ? `installed version ${inst.version}` + (inst.version < p.version ? `, version ${p.version} available` : "")
                                                     : (mine ? "not installed" : "buy it to download");
            if (d && d.state === "failed") line += ` — failed: ${esc(d.error || "")}`;
            const progress = running ? `${megabytes(d.bytes)} / ${megabytes(d.total)} · ${megabytes(d.rate)}/s` +
              (d.eta === null ? "" : ` · ${Math.ceil(d.eta)} s left`) : "";
            return `<div class="pack" id="pack-${esc(p.pack_id)}" data-pack="${esc(p.pack_id)}" data-state="${state}" data-installed="${inst && inst.version !== null ? inst.version : ""}">` +
              `<b>${esc(packTitle(p))}</b>, ${megabytes(p.total_bytes)} <small>(v${p.version})</small><br>` +
              `<button type="button" class="download" data-pack="${esc(p.pack_id)}"${mine && !inst && !running ? "" : " disabled"}>Download</button>` +
              (state === "update-available" ? `<button type="button" class="update" data-pack="${esc(p.pack_id)}"${running ? " disabled" : ""}>Update</button>` : "") +
              `<progress max="${running ? Math.max(d.total, 1) : 1}" value="${running ? d.bytes : 0}"></progress>` +
              `<div class="progress-text">${progress}</div><div class="pack-status">${line}</div></div>`;
          }).join("") || "This server offers no packs.";
          for (const b of el.querySelectorAll("button.download")) b.onclick = () => (shop.last = download(b.dataset.pack, false));
          for (const b of el.querySelectorAll("button.update")) b.onclick = () => (shop.last = download(b.dataset.pack, true));
        }

        async function loadPacks() {
          const [list, inst] = await Promise.all([getJSON("/packs"), getJSON("/store/installed")]);
          shop.packs = list.packs;
          shop.installed = {};
          for (const p of inst.packs) shop.installed[p.pack_id] = p;
          renderPacks();
        }

        async function loadStore() {
          shop.store = await getJSON("/store");
          // The actions exist when this server answers /store/downloads (serve with a store).
          shop.actions = shop.store.library === "store" && await fetch("/store/downloads").then(r => r.ok, () => false);
          renderStore();
          document.getElementById("store-actions").hidden = !shop.actions;
          if (shop.store.packs !== undefined && shop.actions) {
            document.getElementById("packs-panel").hidden = false;
            const d = await getJSON("/store/downloads");
            for (const e of d.downloads) shop.downloads[e.pack_id] = e;
            await loadPacks();
            if (d.downloads.some(e => e.state === "running")) poll();
          }
        }

        /// The map's tiles again (a new URL, so nothing comes from the browser's cache): what a
        /// purchase unlocked shows.
        function reloadTiles() {
          if (!baseLayer) return;
          baseLayer.setUrl("/view/{z}/{x}/{y}.png?r=" + Date.now());
          const m = document.getElementById("map");
          m.dataset.reloads = String(Number(m.dataset.reloads || 0) + 1);
        }

        async function buy(product) {
          setStatus(`buying ${product}…`, "busy");
          try {
            const r = await post(`/store/buy/${encodeURIComponent(product)}`);
            await loadStore();
            reloadTiles();
            setStatus(r.already_owned ? `${product}: already owned (nothing charged)` : `bought ${product} (transaction ${r.transaction_id})`, "done");
            return true;
          } catch (e) {
            setStatus(`buying ${product} failed: ${e.message}`, "error");
            return false;
          }
        }

        async function restore() {
          setStatus("restoring purchases…", "busy");
          try {
            const r = await post("/store/restore");
            await loadStore();
            reloadTiles();
            setStatus(`restored: ${r.inserted} new, ${r.replaced} updated, ${r.unchanged} unchanged`, "done");
            return true;
          } catch (e) {
            setStatus(`restore failed: ${e.message}`, "error");
            return false;
          }
        }

        /// Starts an install (or update) and resolves with whether it ended installed.
        async function download(pack, update) {
          setStatus(`${update ? "updating" : "downloading"} ${pack}…`, "busy");
          try {
            const entry = await post(`/packs/${encodeURIComponent(pack)}/${update ? "update" : "install"}`);
            shop.downloads[pack] = entry;
          } catch (e) {
            setStatus(`${pack}: ${e.message}`, "error");
            return false;
          }
          renderPacks();
          poll();
          return new Promise(resolve => { (shop.waiting ||= {})[pack] = resolve; });
        }

        /// Polls /store/downloads every 300 ms while a download runs; reports each that ends.
        function poll() {
          if (shop.polling) return;
          shop.polling = setInterval(async () => {
            if (shop.pollBusy) return;
            shop.pollBusy = true;
            try {
              const d = await getJSON("/store/downloads");
              const ended = [];
              for (const e of d.downloads) {
                const before = shop.downloads[e.pack_id];
                shop.downloads[e.pack_id] = e;
                if (before && before.state === "running" && e.state !== "running") ended.push(e);
              }
              if (!d.downloads.some(e => e.state === "running")) { clearInterval(shop.polling); shop.polling = null; }
              if (ended.length) await loadPacks(); else renderPacks();
              for (const e of ended) {
                if (e.state === "done") {
                  setStatus(`${e.pack_id}: version ${e.result.version} installed (${e.result.mode}, ${megabytes(e.result.bytes_received)} received)`, "done");
                } else {
                  setStatus(`${e.pack_id}: ${e.error}`, "error");
                }
                const resolve = shop.waiting && shop.waiting[e.pack_id];
                if (resolve) { delete shop.waiting[e.pack_id]; resolve(e.state === "done"); }
              }
            } catch (e) {
              setStatus("progress: " + e.message, "error");
            } finally {
              shop.pollBusy = false;
            }
          }, 300);
        }

        /// ?journey=buy:P,download:K,…: presses the panel's buttons in turn, each after the last ended.
        async function journey(spec) {
          const out = document.getElementById("journey");
          out.hidden = false;
          out.dataset.state = "running";
          const lines = [];
          let ok = true;
          for (const step of spec.split(",").filter(Boolean)) {
            const [what, arg] = [step.split(":")[0], step.split(":").slice(1).join(":")];
            const selector = { buy: `button.buy[data-product="${CSS.escape(arg)}"]`, download: `button.download[data-pack="${CSS.escape(arg)}"]`,
                               update: `button.update[data-pack="${CSS.escape(arg)}"]`, restore: "#restore" }[what];
            const button = selector && document.querySelector(selector);
            let result;
            if (!button) result = "no such button";
            else if (button.disabled) result = "button disabled";
            else {
              shop.last = null;
              button.click();
              result = (await shop.last) ? "ok" : "failed: " + document.getElementById("status").textContent;
            }
            lines.push(`<div class="step" data-step="${esc(step)}" data-result="${result === "ok" ? "ok" : "failed"}">${esc(step)}: ${esc(result)}</div>`);
            if (result !== "ok") { ok = false; break; }
          }
          out.innerHTML = lines.join("");
          out.dataset.state = ok ? "done" : "failed";
        }

        document.getElementById("restore").onclick = () => (shop.last = restore());

        fetch("/regions").then(r => r.json()).then(info => {
          // The library's zooms: /view overzooms to z22 and underzooms a few zooms below the coarsest archive.
          map.setMinZoom(info.view_minzoom);
          map.setMaxZoom(info.view_maxzoom);
          baseLayer = L.tileLayer("/view/{z}/{x}/{y}.png", { minZoom: info.view_minzoom, maxZoom: info.view_maxzoom,
                                                             attribution: esc(info.attribution) }).addTo(map);
          let all = null;
          const list = [];
          const labelled = [];
          for (const r of info.regions) {
            if (!r.bounds) continue;
            const b = L.latLngBounds([r.bounds[1], r.bounds[0]], [r.bounds[3], r.bounds[2]]);
            all = all ? all.extend(b) : L.latLngBounds(b.getSouthWest(), b.getNorthEast());
            const rect = L.rectangle(b, { color: "#246", weight: 2, fill: false, interactive: false }).addTo(map)
              .bindTooltip(esc(r.name), { permanent: true, direction: "center", className: "region-label" });
            rect.closeTooltip();
            labelled.push({ rect, bounds: b });
            list.push(`<div>${esc(r.name)} <small>(${esc(r.codec)}, z${r.minzoom}–${r.maxzoom}${r.elevation ? ", elevation" : ""})</small></div>`);
          }
          for (const a of info.areas) {
            L.polygon(a.rings.map(ring => ring.map(p => [p[1], p[0]])), { color: "#c60", weight: 1.5, dashArray: "5 4", fill: false, interactive: false })
              .addTo(map);
          }
          document.getElementById("regions").innerHTML = list.join("") || "No regions in this library.";
          // A region's name only where it fits: inside the region's box on screen and clear of the
          // labels already placed (larger regions first). At world zoom twenty regions would
          // otherwise pile their names into one heap.
          function placeLabels() {
            const placed = [];
            const boxes = labelled.map(l => {
              const nw = map.latLngToContainerPoint(l.bounds.getNorthWest());
              const se = map.latLngToContainerPoint(l.bounds.getSouthEast());
              return { l, w: se.x - nw.x, h: se.y - nw.y };
            }).sort((a, b) => b.w * b.h - a.w * a.h);
            for (const o of boxes) {
              o.l.rect.openTooltip();
              const el = o.l.rect.getTooltip().getElement();
              const r = el ? el.getBoundingClientRect() : null;
              const fits = r && r.width <= o.w && r.height <= o.h &&
                !placed.some(p => r.left < p.right && p.left < r.right && r.top < p.bottom && p.top < r.bottom);
              if (fits) placed.push(r); else o.l.rect.closeTooltip();
            }
            // The labels shown, measured: what the viewer check reads.
            const out = document.getElementById("labels");
            out.dataset.boxes = JSON.stringify(placed.map(r => [r.left, r.top, r.right, r.bottom].map(Math.round)));
            out.dataset.zoom = String(map.getZoom());
          }
          map.on("zoomend moveend", placeLabels);
          const click = (params.get("click") || "").split(",").map(Number);
          if (click.length >= 2 && click.every(Number.isFinite)) {
            map.setView([click[0], click[1]], click.length > 2 ? click[2] : 11);
            ask(click[0], click[1], map.getZoom());
          } else if (all) {
            map.fitBounds(all);
          } else {
            map.setView([0, 0], 1);
          }
          placeLabels();
          map.on("click", e => ask(e.latlng.lat, e.latlng.lng, map.getZoom()));
        });
        loadStore().then(() => {
          if (params.get("journey")) return journey(params.get("journey"));
        }).catch(e => {
          document.getElementById("store").dataset.state = "error";
          setStatus("store: " + e.message, "error");
          if (params.get("journey")) { const j = document.getElementById("journey"); j.hidden = false; j.dataset.state = "failed"; j.textContent = e.message; }
        });
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
