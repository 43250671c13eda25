"""The viewer in a real browser (issue 13, Must show 1): builds the two Mont Blanc samples (PNG
tiles, up to zoom 13) into a store library (catalog signed, trust file, checks/lib/store.py),
buys one region, starts `tilepack serve --trust` on a free loopback port, and with headless
Chromium
  1. screenshots the viewer and checks with Pillow that map tiles were drawn inside the map
     area (not blank: many colours, not the page background),
  2. loads the viewer with ?click=LAT,LON,ZOOM (a click simulated on load) and checks the dumped
     DOM holds the query answer (data-state="answered", an elevation in metres),
  2b. at the lowest zoom and at zoom 11 reads the region labels' measured boxes (#labels): none
     overlaps another, none at the lowest zoom (the regions are a few pixels there), one at zoom
     11 (the two samples share their bounds: two labels would be one heap),
  3. walks the store journey with the panel's own buttons (?journey=buy:…,download:…, issue
     24): `serve --packs` over packs made by `tilepack pack`, Buy through the test App Store's
     Sandbox, then Download; checks the product shows owned, the pack installed with its
     version, the file is in LIB/packs and `tilepack verify` passes on it, and that a POST from
     a foreign Origin is refused (403) or to a foreign Host name (421, the server's Host check)
     and buys nothing.
Needs Debian's chromium and libjs-leaflet (.ci/run installs them). With
VIEWER_SCREENSHOT=docs/images/viewer.png it also refreshes the README's screenshot.

    python3 -m pytest checks/test_viewer_check.py
"""
import json
import os
import re
import shutil
import subprocess

import pytest
from PIL import Image

from checks.lib.common import Serve, http_get
from checks.lib.store import sample_store

pytestmark = [pytest.mark.browser]

PRODUCT = "com.tilepack.samples.montblanc.courmayeur"


def chromium(work, *args, budget=20000):
    cmd = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
           f"--user-data-dir={work}/chrome", "--window-size=1024,768", f"--virtual-time-budget={budget}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def seen(tilepack, tmp_path_factory):
    """Everything the viewer and the server showed: {name: text or status}, the screenshot's path,
    and the server's exit status after SIGTERM."""
    need = [p for p, present in (("chromium", shutil.which("chromium")),
                                 ("libjs-leaflet", os.path.exists("/usr/share/javascript/leaflet/leaflet.js"))) if not present]
    if need:
        pytest.fail(f"needs {' '.join(need)} (apt-get install {' '.join(need)}; .ci/run installs them)")
    work = str(tmp_path_factory.mktemp("tilepack-viewer"))
    s = sample_store(work, tilepack)
    env = s.env
    # Own one of the two regions: the viewer then shows open tiles beside locked, priced ones.
    subprocess.run([tilepack, "store", "buy", "com.tilepack.samples.montblanc.chamonix", *s.opts()], env=env, capture_output=True)
    # The publisher's packs, served beside the tiles (the store panel's Download buttons).
    r = subprocess.run([tilepack, "pack", "--library", s.lib, "-o", f"{work}/packs", "--key", f"{s.pub}/publisher.jwk",
                        "--license", "CC0-1.0", "--attribution", "tilepack sample terrain (synthetic)"],
                       env=env, capture_output=True, text=True)
    assert r.returncode == 0, f"tilepack pack: {r.stderr}"
    out = {}
    server = Serve(["--library", s.lib, "--packs", f"{work}/packs", "--trust", s.trust, "--simulator", s.sim,
                    "--log-level", "warning"], binary=tilepack, env=env,
                   stdout=f"{work}/serve.out", stderr=f"{work}/serve.err")
    try:
        port, base = server.port, server.base
        print(f"serving on port {port}")
        # Zoom 11 is above the catalog's free zoom (10): the Chamonix side (owned) is drawn, the
        # Courmayeur side is dimmed with its price. The click falls on the owned side.
        url = f"{base}/?click=45.90,6.87,11"
        chromium(work, f"--screenshot={work}/viewer.png", url)
        out["dom"] = chromium(work, "--dump-dom", url).stdout
        # Zoom 0 asked (the map stops at the library's lowest view zoom): the regions are a few
        # pixels wide there, so no label fits.
        out["world.html"] = chromium(work, "--dump-dom", f"{base}/?click=45.85,6.87,0").stdout
        # Refused first: a page elsewhere (foreign Origin) and a rebound name (foreign Host) buy nothing.
        status, _, body = http_get(port, f"/store/buy/{PRODUCT}", {"Origin": "http://evil.example"}, method="POST")
        out["foreign-origin.code"], out["foreign-origin.json"] = str(status), body.decode(errors="replace")
        status, _, _ = http_get(port, "/store/restore", {"Host": f"evil.example:{port}", "Origin": f"http://evil.example:{port}"},
                                method="POST")
        out["foreign-host.code"] = str(status)
        status, _, _ = http_get(port, "/packs/free/install", {"Origin": "http://evil.example"}, method="POST")
        out["foreign-install.code"] = str(status)
        out["store-before.json"] = http_get(port, "/store")[2].decode(errors="replace")
        # The downloads poll every 300 ms of (virtual) time: the budget is generous, the page goes idle when done.
        out["journey.html"] = chromium(work, "--dump-dom", f"{base}/?journey=buy:{PRODUCT},download:{PRODUCT}",
                                       budget=600000).stdout
        out["installed.json"] = http_get(port, "/store/installed")[2].decode(errors="replace")
        out["downloads.json"] = http_get(port, "/store/downloads")[2].decode(errors="replace")
        out["store-after.json"] = http_get(port, "/store")[2].decode(errors="replace")
        # The same origin may act (no Origin: a local program, as `tilepack store buy` could).
        out["own-origin.code"] = str(http_get(port, "/store/restore", {"Origin": base}, method="POST")[0])
        pack_file = f"{s.lib}/packs/{PRODUCT}.mbtiles"
        if os.path.isfile(pack_file):
            v = subprocess.run([tilepack, "verify", pack_file, "--trust", s.trust], env=env, capture_output=True, text=True)
            out["verify.code"], out["verify.out"] = str(v.returncode), v.stdout + v.stderr
    finally:
        server.proc.terminate()
        try:
            out["shutdown"] = server.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.proc.kill()
            out["shutdown"] = server.proc.wait()
    shot = f"{work}/viewer.png"
    if os.environ.get("VIEWER_SCREENSHOT") and os.path.exists(shot):
        shutil.copy(shot, os.environ["VIEWER_SCREENSHOT"])
    out["shot"] = shot
    return out


def read(seen, name, default=""):
    return str(seen.get(name, default)).strip()


def owned(listing, pid):
    try:
        return next((p["owned"] for p in json.loads(listing)["products"] if p["id"] == pid), None)
    except ValueError:
        return None


def test_chromium_wrote_a_screenshot(seen):
    assert os.path.exists(seen["shot"])


@pytest.fixture(scope="module")
def screenshot(seen):
    assert os.path.exists(seen["shot"]), "chromium wrote no screenshot"
    img = Image.open(seen["shot"]).convert("RGB")
    w, h = img.size
    # The map is the left part of the page (the side panel is 300 px wide).
    mapped = img.crop((0, 0, w - 300, h))
    return img, mapped, mapped.getcolors(maxcolors=1 << 20) or []


def test_screenshot_is_1024x768(screenshot):
    assert screenshot[0].size == (1024, 768), f"{screenshot[0].size}"


def test_map_area_has_many_colours_tiles_were_drawn(screenshot):
    assert len(screenshot[2]) > 1000, f"{len(screenshot[2])} colours"


def test_no_single_colour_covers_the_map_area(screenshot):
    _, mapped, colours = screenshot
    top = max(colours)[0] / (mapped.size[0] * mapped.size[1]) if colours else 1
    assert top < 0.6, f"most common: {top:.0%}"


def test_green_pixels_of_the_mont_blanc_tiles(screenshot):
    # Greens of the colour sample's meadows and forests: the region's own pixels, not UI.
    greens = sum(n for n, (r, g, b) in screenshot[2] if g > r + 15 and g > b + 15)
    assert greens > 5000, f"{greens} green pixels"


def test_the_simulated_click_got_a_query_answer(seen):
    assert 'data-state="answered"' in seen["dom"]


def test_the_answer_shows_an_elevation(seen):
    m = re.search(r'class="elevation">(-?[0-9.]+) m<', seen["dom"])
    assert bool(m) and 500 < float(m.group(1)) < 5000, f"{m.group(1) if m else 'none'} m"


def label_boxes(html):
    """The region labels the viewer shows, measured in the page: [[left, top, right, bottom]], and the zoom."""
    m = re.search(r'<div id="labels"[^>]*>', html)
    assert m, "no #labels in the page"
    boxes = re.search(r'data-boxes="([^"]*)"', m.group(0))
    zoom = re.search(r'data-zoom="([0-9]+)"', m.group(0))
    assert boxes and zoom, f"labels never placed: {m.group(0)}"
    return json.loads(boxes.group(1).replace("&quot;", '"')), int(zoom.group(1))


def overlapping(boxes):
    return [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:]
            if a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]]


def test_no_region_label_at_the_lowest_zoom_where_regions_are_specks(seen):
    boxes, zoom = label_boxes(read(seen, "world.html"))
    assert zoom < 9 and boxes == [] and not overlapping(boxes), f"zoom {zoom}: {boxes}"


def test_one_label_for_the_two_samples_sharing_their_bounds_at_zoom_11(seen):
    boxes, zoom = label_boxes(seen["dom"])
    assert zoom == 11 and len(boxes) == 1 and not overlapping(boxes), f"zoom {zoom}: {boxes}"


def test_the_regions_are_listed(seen):
    assert "montblanc-dem" in seen["dom"] and "montblanc-color" in seen["dom"]


def test_the_stores_products_show_prices_and_owned_locked_state(seen):
    dom = seen["dom"]
    assert "4.99 EUR" in dom and "owned" in dom and "locked" in dom


# The store journey (issue 24).

def test_a_buy_post_with_a_foreign_origin_is_refused(seen):
    assert read(seen, "foreign-origin.code") == "403" and "forbiddenOrigin" in read(seen, "foreign-origin.json"), \
        read(seen, "foreign-origin.code")


def test_a_post_addressed_to_a_foreign_host_name_is_refused(seen):
    assert read(seen, "foreign-host.code") == "421", read(seen, "foreign-host.code")


def test_an_install_post_with_a_foreign_origin_is_refused(seen):
    assert read(seen, "foreign-install.code") == "403", read(seen, "foreign-install.code")


def test_the_refused_posts_bought_nothing(seen):
    assert owned(read(seen, "store-before.json"), PRODUCT) is False


def test_the_journey_ran_in_the_browser(seen):
    journey = read(seen, "journey.html")
    m = re.search(r'<div id="journey"[^>]*data-state="([a-z]+)"', journey)
    steps = re.findall(r'class="step"[^>]*data-result="(?:ok|failed)">([^<]*)<', journey)
    assert bool(m) and m.group(1) == "done", f"{m.group(1) if m else 'no #journey'} {steps}"


def test_after_buy_the_product_shows_owned_in_the_panel(seen):
    assert re.search(r'data-product="%s" data-state="owned"' % re.escape(PRODUCT), read(seen, "journey.html")) is not None


def test_store_says_the_product_is_owned(seen):
    """/store says the product is owned (the served read-only library saw the ledger change)"""
    assert owned(read(seen, "store-after.json"), PRODUCT) is True


def test_the_maps_tiles_were_reloaded_after_the_purchase(seen):
    assert re.search(r'data-reloads="[1-9]', read(seen, "journey.html")) is not None


def test_after_download_the_pack_shows_installed_with_its_version(seen):
    pm = re.search(r'<div class="pack" id="pack-%s"[^>]*data-state="([a-z-]+)" data-installed="([0-9]*)"' % re.escape(PRODUCT),
                   read(seen, "journey.html"))
    assert bool(pm) and pm.group(1) == "installed" and pm.group(2) == "1", pm.groups() if pm else "no pack row"


def test_the_packs_show_their_size(seen):
    assert re.search(r'<div class="pack" id="pack-free"[^>]*>.*?MB', read(seen, "journey.html")) is not None


def test_store_installed_lists_it_version_bytes_owned(seen):
    try:
        inst = {p["pack_id"]: p for p in json.loads(read(seen, "installed.json", "{}")).get("packs", [])}
    except ValueError:
        inst = {}
    row = inst.get(PRODUCT, {})
    assert row.get("version") == 1 and row.get("owned") is True and row.get("bytes", 0) > 0, row


def test_store_downloads_done_all_bytes(seen):
    try:
        dls = {d["pack_id"]: d for d in json.loads(read(seen, "downloads.json", "{}")).get("downloads", [])}
    except ValueError:
        dls = {}
    d = dls.get(PRODUCT, {})
    assert d.get("state") == "done" and d.get("bytes") == d.get("total") and (d.get("result") or {}).get("mode") == "full", \
        {k: d.get(k) for k in ("state", "bytes", "total", "error")}


def test_the_installed_file_is_in_lib_packs_and_verify_passes(seen):
    assert read(seen, "verify.code") == "0", read(seen, "verify.out")[-200:]


def test_a_post_from_the_servers_own_origin_acts(seen):
    assert read(seen, "own-origin.code") == "200", read(seen, "own-origin.code")


def test_sigterm_stopped_the_server_cleanly(seen):
    assert seen["shutdown"] == 0, f"exit {seen['shutdown']}"
